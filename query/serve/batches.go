package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
)

// Batch is one batch of a list: its identity, its status and where it
// stopped, and whether that comes from a stored diagnosis or was
// diagnosed on read.
type Batch struct {
	Batch        string    `json:"batch"`
	Pipeline     string    `json:"pipeline"`
	BusinessDate string    `json:"business_date"`
	BatchID      string    `json:"batch_id"`
	Status       string    `json:"status"`
	Verdict      string    `json:"verdict"`
	FirstMissing string    `json:"first_missing"`
	AsOf         time.Time `json:"as_of"`
	// Source is "stored" (the latest row of diagnoses_v2) or "on_read"
	// (replayed from the stored events as of the request).
	Source       string    `json:"source"`
	Events       int       `json:"events"`
	FirstEventAt time.Time `json:"first_event_at"`
	LastEventAt  time.Time `json:"last_event_at"`
	// URL is the batch's web page.
	URL string `json:"url"`
	// Absent: the contract's calendar expects the batch and no event of
	// it came (batches.Absent); Events is 0.
	Absent bool `json:"absent"`
}

// MarshalJSON writes b with its times as every handoff JSON time: RFC 3339
// UTC with three fractional digits (encoding/json would trim the zeros).
func (b Batch) MarshalJSON() ([]byte, error) {
	type plain Batch
	return json.Marshal(struct {
		plain
		AsOf         string `json:"as_of"`
		FirstEventAt string `json:"first_event_at"`
		LastEventAt  string `json:"last_event_at"`
	}{plain(b), model.FormatTime(b.AsOf), model.FormatTime(b.FirstEventAt), model.FormatTime(b.LastEventAt)})
}

// batchFilter selects batches; zero fields select all.
type batchFilter struct {
	pipeline        string
	dates           dateRange
	status, verdict string
}

// listBatches returns every batch f selects, in key order (pipeline,
// business date, batch id), each with its stored diagnosis or one made on
// read as of now, filtered by status and verdict.
//
// The batches are found by reading their events (store, one windowed
// read): the table's sort key starts with the pipeline, so a range of
// dates over every pipeline is a scan of its months whatever is asked, and
// reading the rows once both lists the batches and diagnoses those
// without a stored diagnosis. More than Options.MaxScanEvents events in
// the range is a paramError saying how to narrow it: the read stops there.
func (s *Server) listBatches(ctx context.Context, f batchFilter) ([]Batch, error) {
	// The stored diagnoses are read while the events are.
	type storedResult struct {
		rows map[model.BatchKey]storedRow
		err  error
	}
	storedc := make(chan storedResult, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		rows, err := s.rd.storedRows(rctx, f.pipeline, f.dates)
		storedc <- storedResult{rows, err}
	}()
	read := 0
	sets, err := s.readSets(rctx, f.pipeline, f.dates.from, f.dates.to, func(e *model.Event) error {
		if read++; read > s.maxScan {
			return badParam("from", "more than %d events between %s and %s: narrow the range or give a pipeline", s.maxScan, f.dates.from, f.dates.to)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sr := <-storedc
	if sr.err != nil {
		return nil, sr.err
	}
	stored := sr.rows
	// Each shard's batches of the range, in key order, with the
	// diagnoses of those without a stored one and their names, on a
	// goroutine per shard: made in the one merge below, the names and
	// spans of 10,000 batches were the longest part of a page on one core.
	parts := make([]shardList, len(sets))
	list := func(i int, split bool) {
		set := sets[i]
		listed := set.ListFrom(f.dates.from)
		var missing []batches.Listed
		for _, l := range listed {
			if _, ok := stored[l.Key]; !ok {
				missing = append(missing, l)
			}
		}
		// ds holds the diagnoses of missing, the batches without a stored
		// one in listed's order.
		ds := diagnoseKeys(set, missing, split)
		p := &parts[i]
		p.keys, p.out = make([]model.BatchKey, 0, len(listed)), make([]Batch, 0, len(listed))
		next := 0
		for _, l := range listed {
			k := l.Key
			b := Batch{Pipeline: k.Pipeline, BatchID: k.BatchID}
			b.Batch, b.BusinessDate, b.URL = batchNames(k)
			// The set counts each event id once, so a copy of an event
			// that merges have not collapsed yet is not counted twice,
			// wherever the unordered read put it.
			if n, first, last, ok := set.SpanOf(l); ok {
				b.Events, b.FirstEventAt, b.LastEventAt = n, first, last
			} else {
				b.Absent = true
			}
			if r, ok := stored[k]; ok {
				b.Status, b.Verdict, b.FirstMissing, b.AsOf, b.Source = r.status, r.verdict, r.firstMissing, time.UnixMilli(r.asOfMs).UTC(), "stored"
			} else {
				d := &ds[next]
				next++
				b.Status, b.Verdict, b.FirstMissing, b.AsOf, b.Source = d.status, d.verdict, d.firstMissing, d.asOf, "on_read"
			}
			if (f.status != "" && b.Status != f.status) || (f.verdict != "" && b.Verdict != f.verdict) {
				continue
			}
			p.keys = append(p.keys, k)
			p.out = append(p.out, b)
		}
	}
	if len(sets) == 1 {
		list(0, true)
		return parts[0].out, nil
	}
	var wg sync.WaitGroup
	for i := range sets {
		wg.Go(func() { list(i, false) })
	}
	wg.Wait()
	total := 0
	for i := range parts {
		total += len(parts[i].out)
	}
	out := make([]Batch, 0, total)
	for {
		// The shards' batches merged in key order (a pipeline is in one
		// shard, so no key is in two).
		i := -1
		for j := range parts {
			if p := &parts[j]; p.head < len(p.keys) && (i < 0 || p.keys[p.head].Compare(parts[i].keys[parts[i].head]) < 0) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		p := &parts[i]
		out = append(out, p.out[p.head])
		p.head++
	}
	return out, nil
}

// shardList is what listBatches has of one shard: its batches of the
// range in key order (out, keys[i] the key of out[i]), and how far the
// merge has taken them.
type shardList struct {
	keys []model.BatchKey
	out  []Batch
	head int
}

// parallelDiagnoses is how many batches a list diagnoses on read before
// it splits them between two goroutines.
const parallelDiagnoses = 1024

// onReadRow is what a list shows of a diagnosis on read.
type onReadRow struct {
	status, verdict, firstMissing string
	asOf                          time.Time
}

// diagnoseKeys is what a list shows of the diagnoses of keys, the keys
// cut in two halves evaluated at the same time when there are many: the
// set is only read (EachDiagnosis may run concurrently), each diagnosis
// depends on the set alone, and an all-pipelines day of 10,000 batches
// spent a tenth of its time here on one core while the other waited. A
// list keeps only what it shows of each diagnosis, so each is evaluated
// into the memory of the one before (batches.Set.EachDiagnosis) and the
// full diagnoses of 10,000 batches are never built one by one or held;
// and only as far as what it shows (batches.Set.EachSummaryOf: the status
// and what it is made of, not the timeline, the context or the next
// step), which is the full diagnosis's.
// A shard of an all-pipelines read is not split (split false): the
// shards run at the same time already.
func diagnoseKeys(set *batches.Set, keys []batches.Listed, split bool) []onReadRow {
	out := make([]onReadRow, len(keys))
	run := func(lo, hi int) {
		i := lo
		set.EachSummaryOf(keys[lo:hi], func(d *replay.Diagnosis) {
			out[i] = onReadRow{status: string(d.Status), verdict: d.Verdict.String(), firstMissing: d.FirstMissing, asOf: d.AsOf}
			i++
		})
	}
	if !split || len(keys) < parallelDiagnoses {
		run(0, len(keys))
		return out
	}
	half := len(keys) / 2
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(0, half)
	}()
	run(half, len(keys))
	<-done
	return out
}

// readEvents passes the events f selects to fn, under the query timeout;
// an error from fn stops the read and is returned as it is. The event fn
// is given is overwritten by the next (history.Store.EachEventRef): the
// sets and the learner it feeds copy what they keep.
func (s *Server) readEvents(ctx context.Context, f history.Filter, fn func(*model.Event) error) error {
	qctx, cancel := s.rd.ctx(ctx)
	defer cancel()
	var fnErr error
	err := s.store.EachEventRef(qctx, f, func(e *model.Event) error {
		fnErr = fn(e)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return s.rd.wrap(ctx, qctx, "events", err)
	}
	return nil
}

// BatchDetail is one batch: its diagnosis (timeline, boundaries,
// hypotheses, anomalies, safe next step), the narrative per side, and
// where the diagnosis comes from.
type BatchDetail struct {
	Source    string            `json:"source"`
	Diagnosis *replay.Diagnosis `json:"diagnosis"`
	Sides     []replay.Side     `json:"sides"`
}

// errNoBatch is a batch with no stored events that the calendar does not
// expect either (or not yet: see notDue).
var errNoBatch = errors.New("no such batch")

// noBatch says why batch k, with no event, is not a batch: not expected
// by the contract's calendar, or not due yet (a notDueError).
func (s *Server) noBatch(k model.BatchKey) error {
	c := s.contracts.For(k.Pipeline)
	if !slices.Contains(c.Expected(k.BusinessDate, k.BusinessDate), k) {
		return fmt.Errorf("%w: no events stored for batch %s, and the contract's calendar does not expect it (%s)", errNoBatch, k, scheduleOf(c))
	}
	st := replay.NewState(k)
	d := st.Evaluate(c, s.now(), replay.Context{})
	for _, bs := range d.Boundaries {
		if bs.Name == d.FirstMissing && !bs.Overdue && !bs.Due.IsZero() {
			return &notDueError{key: k, due: bs.Due, boundary: bs.Name}
		}
	}
	return fmt.Errorf("%w: no events stored for batch %s; the calendar expects it, but before the pipeline's first stored batch, or a re-run of its date under another batch id stands in for it", errNoBatch, k)
}

// scheduleOf names c's schedule for messages.
func scheduleOf(c *contract.Contract) string {
	if c.Schedule == "" {
		return "the pipeline's contract has no schedule"
	}
	return "schedule " + string(c.Schedule) + " in " + c.Location.String()
}

// notDueError is an expected batch with no event whose first deadline has
// not passed.
type notDueError struct {
	key      model.BatchKey
	due      time.Time
	boundary string
}

func (e *notDueError) Error() string {
	return fmt.Sprintf("batch %s is expected by the contract's schedule and not due yet: no event of it is stored, and its first boundary (%s) is due by %s",
		e.key, e.boundary, e.due.UTC().Format(time.RFC3339))
}

// readHistory reads the history the batches of [from, to] of pipeline
// ("": every pipeline) need as of now (store/history's rule) into a Set,
// passing each event read to fn too (nil: none) before the Set has it.
// The events (from history.ReadFrom on) and the rest of the context (the
// census and the heartbeats) are read at the same time: the read's first
// date depends on the contracts only. also (nil: none), for one pipeline,
// is a second range of its dates read in the same query (alsoRead).
func (s *Server) readHistory(ctx context.Context, pipeline string, from, to model.Date, also *alsoRead, fn func(*model.Event) error) (*batches.Set, error) {
	sets, err := s.readHistoryIn(ctx, pipeline, from, to, also, fn, 1)
	if err != nil {
		return nil, err
	}
	return sets[0], nil
}

// readSets is readHistory for a list: the history of every pipeline
// comes in shards by pipeline (fold.go; s.shards of them), one Set each,
// the history of one pipeline in one Set.
func (s *Server) readSets(ctx context.Context, pipeline string, from, to model.Date, fn func(*model.Event) error) ([]*batches.Set, error) {
	n := 1
	if pipeline == "" {
		n = s.shards
	}
	return s.readHistoryIn(ctx, pipeline, from, to, nil, fn, n)
}

// readHistoryIn is readHistory into n Sets, the events of each pipeline
// in the Set of its shard (shardOf) with its census and heartbeats; n is
// 1 unless pipeline is "" and the first dates are cached.
func (s *Server) readHistoryIn(ctx context.Context, pipeline string, from, to model.Date, also *alsoRead, fn func(*model.Event) error, n int) ([]*batches.Set, error) {
	req := history.ContextRequest{From: from, To: to, AsOf: s.now(), Contracts: s.contracts}
	if pipeline != "" {
		req.Pipelines = []string{pipeline}
	}
	if fd, ok := s.context.(*history.FirstDateCache); ok {
		return s.readHistoryCached(ctx, fd, pipeline, req, also, fn, n)
	}
	type cxResult struct {
		cx  *history.Context
		err error
	}
	cxc := make(chan cxResult, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		qctx, cancel := s.rd.ctx(rctx)
		defer cancel()
		cx, err := history.ReadContext(qctx, s.context, req)
		if err != nil {
			err = s.rd.wrap(rctx, qctx, "the history context", err)
		}
		cxc <- cxResult{cx, err}
	}()
	set := batches.New(s.contracts, req.AsOf)
	set.Brief(0, 0)
	set.Covers(from, to)
	hf := history.Filter{Pipeline: pipeline, From: history.ReadFrom(req), To: to, Unordered: true, Small: true}
	err := s.readEvents(rctx, also.filter(hf), func(e *model.Event) error {
		if !also.route(e, hf) {
			return nil
		}
		if fn != nil {
			if err := fn(e); err != nil {
				return err
			}
		}
		set.Add(e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r := <-cxc
	if r.err != nil {
		return nil, r.err
	}
	r.cx.AddTo(set)
	return []*batches.Set{set}, nil
}

// readHistoryCached is readHistoryIn with the first dates from fd: the
// census is counted from the events read (history.RangeCount) rather than
// read, so the page's history is one read of its range's events, with the
// latest heartbeats and the cached dates (read again when old) at the same
// time. The Sets are those history.ReadContext's Context would give: their
// heartbeats are each process's one that counts
// (history.Store.LatestHeartbeatPerProcess), the one a Set keeps of
// ReadContext's.
func (s *Server) readHistoryCached(ctx context.Context, fd *history.FirstDateCache, pipeline string, req history.ContextRequest, also *alsoRead, fn func(*model.Event) error, n int) ([]*batches.Set, error) {
	type hbResult struct {
		events []model.Event
		err    error
	}
	hbc := make(chan hbResult, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		qctx, cancel := s.rd.ctx(rctx)
		defer cancel()
		hbs, err := s.store.LatestHeartbeatPerProcess(qctx, req.Pipelines, req.AsOf.UTC().Truncate(time.Millisecond))
		if err != nil {
			err = s.rd.wrap(rctx, qctx, "the latest heartbeats", err)
		}
		hbc <- hbResult{hbs, err}
	}()
	// The dates are asked for now: when they are old, their read starts
	// while the events are read.
	datesc := make(chan error, 1)
	go func() {
		_, err := fd.Dates(rctx)
		datesc <- err
	}()
	cf := req.CensusFilter()
	size := 1
	if pipeline == "" {
		size = fd.Pipelines()/n + 1
	}
	// About how many batches each Set gets: a batch a pipeline and date.
	days := req.To.DaysSinceEpoch() - cf.ReadFrom.DaysSinceEpoch() + 1
	hint := min(size*max(days, 1), 1<<16) // beyond, the table grows as it fills
	sets := make([]*batches.Set, n)
	seen := make([]*history.RangeCount, n)
	for i := range sets {
		// Each Set asks the contracts for a pipeline once (batches.Set
		// keeps the answer by pipeline), and contract.Set answers any
		// number of goroutines at once.
		sets[i] = batches.New(s.contracts, req.AsOf)
		sets[i].Brief(hint, size)
		sets[i].Covers(req.From, req.To)
		seen[i] = history.NewRangeCount(req.From, size)
	}
	fold := func(e *model.Event) {
		seen[0].Add(e)
		sets[0].Add(e)
	}
	var shards *foldShards
	if pipeline == "" {
		// every pipeline: the fold overlaps the read, in shards (fold.go)
		shards = newFoldShards(n, func(i int, e *model.Event) {
			seen[i].Add(e)
			sets[i].Add(e)
		})
		fold = shards.add
	}
	hf := history.Filter{Pipeline: pipeline, From: cf.ReadFrom, To: req.To, Unordered: true, Small: true}
	err := s.readEvents(rctx, also.filter(hf), func(e *model.Event) error {
		if !also.route(e, hf) {
			return nil
		}
		if fn != nil {
			if err := fn(e); err != nil {
				return err
			}
		}
		fold(e)
		return nil
	})
	if shards != nil {
		shards.wait()
	}
	if err != nil {
		return nil, err
	}
	if err := <-datesc; err != nil {
		return nil, err
	}
	hb := <-hbc
	if hb.err != nil {
		return nil, hb.err
	}
	if n == 1 {
		census, err := fd.CensusOf(rctx, seen[0], cf)
		if err != nil {
			return nil, err
		}
		history.Assemble(req, census, hb.events).AddTo(sets[0])
		return sets, nil
	}
	// Each shard's census (its own pipelines: the scheduled ones of the
	// others come in every shard's otherwise) and heartbeats, at the same
	// time.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range sets {
		wg.Go(func() {
			census, err := fd.CensusOfShard(rctx, seen[i], cf, func(p string) bool { return shardOf(p, n) == i })
			if err != nil {
				errs[i] = err
				return
			}
			history.Assemble(req, census, hb.events).AddTo(sets[i])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the shards' errors are the dates' read's, one for all
		}
	}
	return sets, nil
}

// batch returns batch k: its latest stored diagnosis, or a diagnosis on
// read as of now from the history the batch needs (store/history's
// Context: the previous batch's date on, the pipeline's first date, the
// latest heartbeats), an absent expected batch included.
func (s *Server) batch(ctx context.Context, k model.BatchKey) (*BatchDetail, error) {
	// The stored diagnosis and the events are read at the same time: most
	// of either is waiting for ClickHouse, and without a stored diagnosis
	// (the common case until backfill has run) both are needed.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type storedResult struct {
		b   []byte
		err error
	}
	storedc := make(chan storedResult, 1)
	go func() {
		b, err := s.rd.storedDiagnosis(ctx, k)
		storedc <- storedResult{b, err}
	}()
	// The baselines' window too, in the same query as the batch's
	// history: a diagnosis on read shows them.
	asOf := s.now()
	bw := history.BaselineWindow(k.Pipeline, asOf)
	learner := learn.New()
	set, readErr := s.readHistory(ctx, k.Pipeline, k.BusinessDate, k.BusinessDate, &alsoRead{from: bw.From, to: bw.To, fn: learner.Add}, nil)
	stored := <-storedc
	if stored.err != nil {
		return nil, stored.err
	}
	if stored.b != nil {
		var d replay.Diagnosis
		if err := json.Unmarshal(stored.b, &d); err != nil {
			return nil, fmt.Errorf("the stored diagnosis of %s in %s.diagnoses_v2 does not decode: %w", k, s.rd.db, err)
		}
		d.Zone = s.zone(k.Pipeline) // JSON does not carry it
		return &BatchDetail{Source: "stored", Diagnosis: &d, Sides: replay.Narrate(&d)}, nil
	}
	if readErr != nil {
		return nil, readErr
	}
	// The upstream rule's input: the outcomes of the batches k waits for
	// (nil when no contract lists an upstream).
	ups, err := history.ReadUpstreams(ctx, s.store, history.ContextRequest{Pipelines: []string{k.Pipeline}, From: k.BusinessDate, To: k.BusinessDate, AsOf: s.now(), Contracts: s.contracts})
	if err != nil {
		return nil, err
	}
	if ups != nil {
		set.Upstreams(ups)
	}
	d, ok := set.DiagnoseOne(k)
	if !ok {
		return nil, s.noBatch(k)
	}
	x := learner.ExpectedAt(k.Pipeline, asOf, s.baseline)
	if !learn.BaselineAsOf(d.AsOf).Equal(learn.BaselineAsOf(asOf)) {
		// The UTC day turned between asOf and the history's as-of: the
		// diagnosis's as-of has the next day's baselines.
		if x, err = s.baselines(ctx, k.Pipeline, d.AsOf); err != nil {
			return nil, err
		}
	}
	x.Annotate(&d, k)
	return &BatchDetail{Source: "on_read", Diagnosis: &d, Sides: replay.Narrate(&d)}, nil
}

// alsoRead is a second range of business dates [from, to] of the one
// pipeline a history read reads, in the same query (history.Filter's
// AlsoFrom and AlsoTo): each of its events goes to fn, and to the Set only
// when it is in the history's range too. nil reads none.
type alsoRead struct {
	from, to model.Date
	fn       func(*model.Event)
}

// filter is f with a's range added.
func (a *alsoRead) filter(f history.Filter) history.Filter {
	if a != nil {
		f.AlsoFrom, f.AlsoTo = a.from, a.to
	}
	return f
}

// route passes e to a.fn when it is in a's range and reports whether it
// is in the history's range [f.From, f.To] (always, when a is nil).
func (a *alsoRead) route(e *model.Event, f history.Filter) bool {
	if a == nil {
		return true
	}
	d := e.BusinessDate
	if d.Compare(a.from) >= 0 && d.Compare(a.to) <= 0 {
		a.fn(e)
	}
	return d.Compare(f.From) >= 0 && d.Compare(f.To) <= 0
}

// baselines learns pipeline's baselines in force at asOf from its stored
// events of their window (history.BaselineWindow), as `handoff diagnose
// --clickhouse` does, so that a batch diagnosed on read shows the
// baseline the command shows for the same as-of; nil when the history
// supports none.
func (s *Server) baselines(ctx context.Context, pipeline string, asOf time.Time) (*learn.Expected, error) {
	l := learn.New()
	f := history.BaselineWindow(pipeline, asOf)
	f.Small = true // four weeks of one pipeline: one query, not a count and a read
	if err := s.readEvents(ctx, f, func(e *model.Event) error {
		l.Add(e)
		return nil
	}); err != nil {
		return nil, err
	}
	return l.ExpectedAt(pipeline, asOf, s.baseline), nil
}

// batchNames returns k.String(), k.BusinessDate.String() and
// batchPath(k), pieces of one string when the pipeline and batch id need
// no escape in a path (most do not): a list of every pipeline's day makes
// them for each of 10,000 batches.
func batchNames(k model.BatchKey) (key, date, path string) {
	p, id := pathEscape(k.Pipeline), pathEscape(k.BatchID)
	const prefix = "/batches/"
	b := make([]byte, 0, len(prefix)+len(p)+len(id)+12)
	b = append(append(append(b, prefix...), p...), '/')
	from := len(b)
	b = k.BusinessDate.AppendFormat(b)
	to := len(b)
	path = string(append(append(b, '/'), id...))
	if p != k.Pipeline || id != k.BatchID {
		return k.String(), path[from:to], path
	}
	return path[len(prefix):], path[from:to], path
}

// batchPath is the web page of batch k; the alerting links to it.
func batchPath(k model.BatchKey) string {
	return "/batches/" + pathEscape(k.Pipeline) + "/" + k.BusinessDate.String() + "/" + pathEscape(k.BatchID)
}

// Package backfill re-examines past batches: it reads the stored delivery
// history from ClickHouse (store/history) in pipeline and business-date
// order, replays every batch of a range of business dates as of one time
// with the same fold as `handoff diagnose` (analyzer/batches), and hands
// the diagnoses, in batch key order, to a Publisher (the diagnoses topic,
// which `handoff ingest` stores in diagnoses_v2) and to the caller, with a
// summary.
//
// Memory is bounded whatever the range: the pipelines are cut into units
// of at most Config.UnitRows stored rows (several small pipelines in one
// query, or one large pipeline read in windows of dates), a few units are
// folded at a time by a pool of workers, and a pipeline is folded one
// business date at a time (batches.Ordered): a batch is diagnosed and
// dropped as soon as the read has passed its date, keeping only its
// verdict for the continuity check of the next batch.
//
// The answer is the one diagnose gives over a file holding the whole
// history: the read is the one store/history's Context says a batch needs
// (the previous batch of the first batch in range, each pipeline's first
// business date in the whole table, the latest heartbeat of each process
// up to the as-of time), and the expected batches that sent no event are
// diagnosed too (batches.Absent), in key order among the others.
package backfill

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// Reader reads the stored history; *history.Store implements it.
type Reader interface {
	Census(ctx context.Context, f history.CensusFilter) ([]history.PipelineRows, error)
	LatestHeartbeats(ctx context.Context, pipelines []string, asOf time.Time) ([]model.Event, error)
	EachBatchEvent(ctx context.Context, pipelines []string, from, to model.Date, fn func(model.Event) error) error
	EachBatchEventPasses(ctx context.Context, pipelines []string, passes ...history.Pass) error
	EachEvent(ctx context.Context, f history.Filter, fn func(model.Event) error) error
}

// Contracts gives the contract of a pipeline and lists the pipelines that
// have one (*contract.Set implements it; a nil *contract.Set has none).
type Contracts = history.Contracts

// Config says what to backfill.
type Config struct {
	// From and To bound the business dates diagnosed, inclusive; both
	// required.
	From, To model.Date
	// Pipelines to diagnose; nil: every pipeline with a batch event in
	// [From, To], and every pipeline with a contract whose stored history
	// starts by To (history.ContextRequest).
	Pipelines []string
	// AsOf is the time every batch is diagnosed as of.
	AsOf      time.Time
	Contracts Contracts
	// Workers fold units in parallel; zero: GOMAXPROCS.
	Workers int
	// UnitRows is the most stored rows one read covers; zero:
	// DefaultUnitRows.
	UnitRows int
	// ReadAhead has each worker read the unit after the one it folds
	// while it folds (readAhead): the server reads while handoff folds.
	// It holds a unit's events more per worker, which under backfill's
	// GOGC=300 took the peak RSS of a year of 1,000 pipelines from 258 to
	// 461 MiB (2026-12-02, on a machine too busy to time the gain): off
	// until measured on a quiet one.
	ReadAhead bool
	// Baselines, when not nil, are the learner's options: each diagnosis
	// shows the baselines in force at AsOf (learn.BaselineAsOf), learned
	// from a first read of each unit's window, as handoff detect and
	// diagnose learn them (docs/learned.md).
	Baselines *learn.Options
}

// DefaultUnitRows is the default Config.UnitRows. A unit's rows are held
// while its query streams: 200,000 rows a unit took the peak RSS of a
// year of 100 pipelines to 330 MiB, 50,000 to 170 MiB (2026-11-30). But
// every query reads at least one granule (8,192 rows) of each part its
// pipelines have rows in, and a year of monthly partitions is some 36
// parts: with units of 50,000 rows the server spent more CPU on a
// backfill's reads than on an ordered export of all its rows. 200,000
// rows a unit cut the server's CPU for a year of 1,000 pipelines from
// about 15 to 6 s, at a peak RSS of about 445 MiB (2026-12-02).
const DefaultUnitRows = 200_000

// Plan is what the census found, before anything is folded.
type Plan struct {
	Pipelines int
	// Rows is the number of stored rows to read (copies that merges have
	// not collapsed included): the progress total.
	Rows int64
	// ReadFrom is the first business date read: From, or earlier for the
	// previous batch of the first batch in range.
	ReadFrom model.Date
}

// NoEventsError says that pipelines named in Config.Pipelines have no
// batch event in the range: a misspelt name or a wrong range, which a
// backfill must not pass over in silence.
type NoEventsError struct {
	Pipelines []string
	From, To  model.Date
}

func (e *NoEventsError) Error() string {
	return fmt.Sprintf("no batch event from %s to %s in the stored history", e.From, e.To)
}

// Hooks are told how the run goes; every field may be nil. They run on
// the caller's goroutine (inside Run), except Read, which the workers call.
type Hooks struct {
	// Planned is called once the census is known.
	Planned func(Plan)
	// Read is called with the number of events folded, as they are.
	Read func(n int64)
	// Chunk is called with every chunk of diagnoses, in batch key order.
	Chunk func(*Chunk) error
	// Recycle says that Chunk keeps nothing of a chunk once it has
	// returned: Run hands the chunk's buffers to the workers again (a
	// fresh chunk of 288 KiB for every 256 KiB of output, zeroed, was
	// more than 1% of a dry backfill's CPU).
	Recycle bool
}

// Chunk is a run of consecutive diagnoses (in batch key order), rendered.
type Chunk struct {
	// JSON holds the compact diagnoses (replay.Diagnosis.AppendJSON), each
	// after the two bytes of Sep: diagnosis i is JSON[Ends[i-1]+2:Ends[i]]
	// (from 2 for i = 0). So the chunk is a piece of the JSON array of
	// every diagnosis, written in one piece (with "[\n" for the Sep
	// opening the first chunk), where a write of each diagnosis and its
	// separator copied the output once more.
	JSON []byte
	Ends []int
	// Keys are the batch keys of the diagnoses (pipeline/business_date/batch_id).
	Keys []string
	// Plain says that JSON is printable ASCII and newlines only
	// (replay.Diagnosis.AppendJSONText said so of every diagnosis): text
	// the output's escaping passes on as it is, without a scan.
	Plain bool
	tally tally
}

// Len returns the number of diagnoses.
func (c *Chunk) Len() int { return len(c.Ends) }

// Sep is what comes before each diagnosis in Chunk.JSON: the separator
// of the elements of a JSON array, one diagnosis a line.
const Sep = ",\n"

// Diagnosis returns the JSON of diagnosis i.
func (c *Chunk) Diagnosis(i int) []byte {
	start := 0
	if i > 0 {
		start = c.Ends[i-1]
	}
	return c.JSON[start+len(Sep) : c.Ends[i]]
}

// chunkBytes is the size at which a worker hands a chunk over: large
// enough to amortise the hand-over and a Kafka write, small enough that
// the chunks waiting for an earlier unit stay a few MiB.
const chunkBytes = 256 << 10

// newChunk returns an empty chunk with room for chunkBytes of JSON and a
// diagnosis more: grown by appends from nothing, a chunk's JSON was
// copied a dozen times over (a tenth of a backfill's CPU, in growslice).
func newChunk() *Chunk {
	const guess = chunkBytes / 2048 // diagnoses of 2 KiB or more
	return &Chunk{JSON: make([]byte, 0, chunkBytes+32<<10), Ends: make([]int, 0, guess), Keys: make([]string, 0, guess), Plain: true}
}

// reset empties c for reuse, keeping its buffers.
func (c *Chunk) reset() {
	clear(c.Keys) // no key kept alive by a recycled chunk
	c.JSON, c.Ends, c.Keys, c.Plain, c.tally = c.JSON[:0], c.Ends[:0], c.Keys[:0], true, tally{}
}

// queuedChunks is how many chunks a unit may have waiting for the
// collector: with Workers units in flight it bounds the memory of
// output computed ahead of the unit being written (Workers x 65 x 288
// KiB, 37 MiB on two cores). A unit of DefaultUnitRows rows renders
// some 25 MiB of JSON (about 100 chunks), and the worker a unit ahead
// runs about half a unit ahead: with 4 chunks it stopped after its first
// MiB until the unit before was written, so the folds ran one at a time
// while a core waited (a dry backfill used 0.9 of two cores,
// 2026-12-02); 128 chunks took the peak RSS from 340 to 420 MiB.
const queuedChunks = 64

// unit is a run of pipelines read by one query (or one large pipeline,
// read in windows), folded by one worker.
type unit struct {
	pipelines []history.PipelineRows
	big       bool
	out       chan *Chunk
	err       error // set before out is closed
}

// Run backfills: census, heartbeats, then the units folded by the
// workers and handed to hooks.Chunk in batch key order. It returns the
// summary of what was diagnosed; after an error the summary holds what was
// handed over before it.
func Run(ctx context.Context, r Reader, cfg Config, hooks Hooks) (*Summary, error) {
	if cfg.From.IsZero() || cfg.To.IsZero() {
		return nil, errors.New("from and to dates are required")
	}
	if cfg.To.Compare(cfg.From) < 0 {
		return nil, fmt.Errorf("to %s is before from %s", cfg.To, cfg.From)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.UnitRows <= 0 {
		cfg.UnitRows = DefaultUnitRows
	}
	asOf := cfg.AsOf.UTC().Truncate(time.Millisecond)
	started := time.Now()

	cx, err := history.ReadContext(ctx, r, history.ContextRequest{Pipelines: cfg.Pipelines, From: cfg.From, To: cfg.To, AsOf: asOf, Contracts: cfg.Contracts})
	if err != nil {
		return nil, err
	}
	census, readFrom := cx.Census, cx.ReadFrom
	if missing := absent(cfg.Pipelines, census); len(missing) > 0 {
		return nil, &NoEventsError{Pipelines: missing, From: cfg.From, To: cfg.To}
	}
	plan := Plan{Pipelines: len(census), ReadFrom: readFrom}
	for _, p := range census {
		plan.Rows += int64(p.Rows)
	}
	if hooks.Planned != nil {
		hooks.Planned(plan)
	}
	sum := newSummary(plan)
	if len(census) == 0 {
		sum.Took = time.Since(started)
		return sum, nil
	}
	var procs batches.Processes
	for i := range cx.Heartbeats {
		procs.Add(&cx.Heartbeats[i])
	}
	// The pipelines these wait for, read first: the upstream rule's input
	// (nil when no contract lists an upstream).
	ups, err := history.ReadUpstreams(ctx, r, history.ContextRequest{Pipelines: cfg.Pipelines, From: cfg.From, To: cfg.To, AsOf: asOf, Contracts: cfg.Contracts})
	if err != nil {
		return nil, err
	}

	units := cut(census, uint64(cfg.UnitRows))
	ctx, cancel := context.WithCancel(ctx)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	// No worker outlives Run: a worker waiting to hand a chunk over sees
	// the cancellation.
	defer func() {
		cancel()
		wg.Wait()
	}()
	w := &worker{cfg: cfg, asOf: asOf, readFrom: readFrom, r: r, procs: &procs, read: hooks.Read}
	if hooks.Recycle {
		// Enough for every chunk in flight: each unit folding may have
		// queuedChunks waiting and one being filled.
		w.free = make(chan *Chunk, min(cfg.Workers, len(units))*(queuedChunks+1)+1)
	}
	if ups != nil {
		w.ups = ups
	}
	for range min(cfg.Workers, len(units)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// With ReadAhead a worker claims the unit after the one it
			// folds and reads it ahead (readAhead), so that the server
			// reads the next unit while handoff folds this one: read and
			// fold in turn, a worker leaves the server idle while it
			// folds, and itself idle while the server reads. Without, it
			// claims the next unit once it has folded one, so that a
			// worker slow on its unit holds no other back. Every unit
			// claimed is closed, folded or failed with the context's
			// error: Run waits for each unit's out, in order.
			claim := func() int { return int(next.Add(1)) - 1 }
			i := claim()
			var a *ahead // unit i's read ahead; nil: read as it folds
			for i < len(units) {
				u := units[i]
				if err := ctx.Err(); err != nil {
					u.err = err
					close(u.out)
					return
				}
				j := -1
				var b *ahead
				if w.cfg.ReadAhead {
					if j = claim(); j < len(units) && !units[j].big {
						b = w.readAhead(ctx, units[j], &wg)
					}
				}
				u.err = w.fold(ctx, u, a)
				close(u.out)
				if j < 0 {
					j = claim()
				}
				i, a = j, b
			}
		}()
	}

	for _, u := range units {
		for c := range u.out {
			sum.add(&c.tally)
			if hooks.Chunk != nil {
				if err := hooks.Chunk(c); err != nil {
					cancel()
					return sum, err
				}
			}
			if w.free != nil {
				c.reset()
				select {
				case w.free <- c:
				default:
				}
			}
		}
		if u.err != nil {
			cancel()
			return sum, u.err
		}
	}
	sum.Events = w.events.Load()
	sum.Took = time.Since(started)
	return sum, nil
}

// absent returns the pipelines of named that the census does not list.
func absent(named []string, census []history.PipelineRows) []string {
	found := make(map[string]bool, len(census))
	for _, p := range census {
		found[p.Pipeline] = true
	}
	var out []string
	for _, p := range named {
		if !found[p] && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// cut packs consecutive pipelines into units of at most limit stored
// rows; a pipeline larger than that is a unit of its own, read in windows.
func cut(census []history.PipelineRows, limit uint64) []*unit {
	var (
		out  []*unit
		rows uint64
	)
	for _, p := range census {
		if p.Rows > limit {
			out = append(out, &unit{pipelines: []history.PipelineRows{p}, big: true, out: make(chan *Chunk, queuedChunks)})
			rows = limit // the next pipeline starts a unit
			continue
		}
		if len(out) == 0 || out[len(out)-1].big || rows+p.Rows > limit {
			out = append(out, &unit{out: make(chan *Chunk, queuedChunks)})
			rows = 0
		}
		u := out[len(out)-1]
		u.pipelines = append(u.pipelines, p)
		rows += p.Rows
	}
	return out
}

// worker folds units; its fields are shared, read-only.
type worker struct {
	cfg      Config
	asOf     time.Time
	readFrom model.Date
	r        Reader
	procs    *batches.Processes
	ups      upstream.Batches // nil: no contract lists an upstream
	read     func(int64)
	events   atomic.Int64
	free     chan *Chunk // chunks handed back by Run (Hooks.Recycle); nil: none
}

// chunk returns an empty chunk: a recycled one when there is one.
func (w *worker) chunk() *Chunk {
	select {
	case c := <-w.free:
		return c
	default:
		return newChunk()
	}
}

// report counts n events folded.
func (w *worker) report(n int64) {
	w.events.Add(n)
	if w.read != nil {
		w.read(n)
	}
}

// ahead is a unit read ahead of its fold: its events in the read's
// order and its baselines, ready when done is closed.
type ahead struct {
	done   chan struct{}
	events []model.Event
	exp    *learn.Expectations
	err    error
}

// readAhead reads u (not big: a unit of at most Config.UnitRows rows,
// which its events can be held of) on a goroutine of its own, counted in
// wg.
func (w *worker) readAhead(ctx context.Context, u *unit, wg *sync.WaitGroup) *ahead {
	var rows uint64
	for _, p := range u.pipelines {
		rows += p.Rows
	}
	a := &ahead{done: make(chan struct{}), events: make([]model.Event, 0, rows)}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(a.done)
		a.err = w.readUnit(ctx, u, &a.exp, func(e *model.Event) error {
			a.events = append(a.events, *e)
			return nil
		})
	}()
	return a
}

// fold reads and folds one unit, sending its chunks to u.out: from a, its
// read ahead, when not nil.
func (w *worker) fold(ctx context.Context, u *unit, a *ahead) error {
	if a != nil {
		select {
		case <-a.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if a.err != nil {
			return a.err
		}
	}
	var (
		ord    *batches.Ordered
		cur    string
		pi     int // index in u.pipelines of cur
		chunk  = w.chunk()
		unread int64
	)
	send := func() error {
		if unread > 0 {
			w.report(unread)
			unread = 0
		}
		if chunk.Len() == 0 {
			return nil
		}
		select {
		case u.out <- chunk:
		case <-ctx.Done():
			return ctx.Err()
		}
		chunk = w.chunk()
		return nil
	}
	var (
		exp *learn.Expectations // set by read before the first event
		err error
	)
	if a != nil {
		exp = a.exp
	}
	var (
		keys     keyParser
		expOf    *learn.Expected // exp.Of(expName)
		expName  string
		expKnown bool
	)
	yield := func(d *replay.Diagnosis) error {
		if exp != nil {
			if k, ok := keys.parse(d.Batch); ok {
				if !expKnown || k.Pipeline != expName {
					expOf, expName, expKnown = exp.Of(k.Pipeline), k.Pipeline, true
				}
				expOf.Annotate(d, k)
			}
		}
		var plain bool
		chunk.JSON, plain = d.AppendJSONText(append(chunk.JSON, Sep...))
		chunk.Plain = chunk.Plain && plain
		chunk.Ends = append(chunk.Ends, len(chunk.JSON))
		// A copy: the diagnosis' strings are reused by the batches after
		// it (batches.NewOrdered), and the key lives with the chunk.
		chunk.Keys = append(chunk.Keys, strings.Clone(d.Batch))
		chunk.tally.add(d)
		if len(chunk.JSON) >= chunkBytes {
			return send()
		}
		return nil
	}
	// start begins the fold of pipeline pi; finish ends the current one
	// and folds the pipelines before next that had no event in the read
	// (their absent expected batches are still diagnoses).
	start := func(i int) {
		cur, pi = u.pipelines[i].Pipeline, i
		ord = batches.NewOrdered(w.cfg.Contracts, cur, w.asOf, batches.OrderedOptions{
			First: u.pipelines[i].First, From: w.cfg.From, To: w.cfg.To, Alive: w.procs.Alive(cur, nil), Upstreams: w.ups,
		}, yield)
	}
	finish := func(next int) error {
		if ord != nil {
			if err := ord.Finish(); err != nil {
				return err
			}
			pi++
		}
		for ; pi < next; pi++ {
			start(pi)
			if err := ord.Finish(); err != nil {
				return err
			}
		}
		ord = nil
		return nil
	}
	add := func(e *model.Event) error {
		if e.Pipeline != cur {
			next := pi
			for next < len(u.pipelines) && u.pipelines[next].Pipeline != e.Pipeline {
				next++
			}
			if next == len(u.pipelines) {
				return fmt.Errorf("read an event of pipeline %q, which is not in this read (%s...): the store returned rows out of order",
					e.Pipeline, u.pipelines[0].Pipeline)
			}
			if err := finish(next); err != nil {
				return err
			}
			start(next)
		}
		unread++
		if unread&4095 == 0 {
			w.report(unread)
			unread = 0
		}
		return ord.Add(e)
	}
	if a != nil {
		for i := range a.events {
			if err = add(&a.events[i]); err != nil {
				break
			}
		}
		a.events = nil
	} else {
		err = w.readUnit(ctx, u, &exp, add)
	}
	if err == nil {
		err = finish(len(u.pipelines))
	}
	if err == nil {
		err = send()
	}
	return err
}

// each reads the events of u's pipelines of the business dates from to to.
func (w *worker) each(ctx context.Context, u *unit, from, to model.Date, fn func(model.Event) error) error {
	if u.big {
		return w.r.EachEvent(ctx, history.Filter{Pipeline: u.pipelines[0].Pipeline, From: from, To: to}, fn)
	}
	names := make([]string, len(u.pipelines))
	for i, p := range u.pipelines {
		names[i] = p.Pipeline
	}
	return w.r.EachBatchEvent(ctx, names, from, to, fn)
}

// readUnit hands the events of u's pipelines of the business dates
// readFrom to To to fn, setting *exp (with baselines) to the
// expectations learned from u's window before the first of them. A unit
// that is not big reads its window and its range in one query
// (EachBatchEventPasses), the window walked first. The event is fn's
// only until it returns.
func (w *worker) readUnit(ctx context.Context, u *unit, exp **learn.Expectations, fn func(*model.Event) error) error {
	if u.big {
		if w.cfg.Baselines != nil {
			var err error
			if *exp, err = w.expectations(ctx, u); err != nil {
				return err
			}
		}
		var ev model.Event // one copy for the read, not one per event
		return w.each(ctx, u, w.readFrom, w.cfg.To, func(e model.Event) error {
			ev = e
			return fn(&ev)
		})
	}
	names := make([]string, len(u.pipelines))
	for i, p := range u.pipelines {
		names[i] = p.Pipeline
	}
	if w.cfg.Baselines == nil {
		return w.r.EachBatchEventPasses(ctx, names, history.Pass{From: w.readFrom, To: w.cfg.To, Fn: fn})
	}
	asOf, wFrom, wTo := w.window()
	l := learn.New()
	learned := func() {
		if l != nil {
			*exp, l = l.Expect(asOf, 0, *w.cfg.Baselines), nil
		}
	}
	err := w.r.EachBatchEventPasses(ctx, names,
		history.Pass{From: wFrom, To: wTo, Fn: func(e *model.Event) error {
			l.Add(e)
			return nil
		}},
		history.Pass{From: w.readFrom, To: w.cfg.To, Fn: func(e *model.Event) error {
			learned()
			return fn(e)
		}})
	if err != nil {
		return err
	}
	learned()
	return nil
}

// window returns the time the baselines are learned as of and the
// business dates of the window they are learned from.
func (w *worker) window() (asOf time.Time, from, to model.Date) {
	asOf = learn.BaselineAsOf(w.asOf)
	y, m, d := asOf.UTC().Date()
	to = model.Date{Year: y, Month: m, Day: d}
	return asOf, to.AddDays(-(learn.DefaultBaselineDays - 1)), to
}

// expectations learns the baselines in force at the as-of for u's
// pipelines from a read of their window of its own; nil without
// baselines.
func (w *worker) expectations(ctx context.Context, u *unit) (*learn.Expectations, error) {
	if w.cfg.Baselines == nil {
		return nil, nil
	}
	asOf, from, to := w.window()
	l := learn.New()
	err := w.each(ctx, u, from, to, func(e model.Event) error {
		l.Add(&e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the baselines' window: %w", err)
	}
	return l.Expect(asOf, 0, *w.cfg.Baselines), nil
}

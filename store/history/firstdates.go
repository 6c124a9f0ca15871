package history

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// FirstDates returns every pipeline's first business date with a batch
// event in the whole table: one GROUP BY over the primary key columns
// (pipeline, business_date) and batch_id, of every row. Census reads the
// same per request, bounded by its range's end; FirstDateCache keeps it.
func (s *Store) FirstDates(ctx context.Context) (map[string]model.Date, error) {
	rows, err := s.conn.Query(ctx, "SELECT pipeline, min(business_date) FROM "+s.events()+" WHERE batch_id != '' GROUP BY pipeline")
	if err != nil {
		return nil, fmt.Errorf("read each pipeline's first business date from %s: %w", s.events(), err)
	}
	defer rows.Close()
	out := make(map[string]model.Date)
	for rows.Next() {
		var (
			p     string
			first time.Time
		)
		if err := rows.Scan(&p, &first); err != nil {
			return nil, fmt.Errorf("read each pipeline's first business date from %s: scan: %w", s.events(), err)
		}
		out[p] = model.Date{Year: first.Year(), Month: first.Month(), Day: first.Day()}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read each pipeline's first business date from %s: %w", s.events(), err)
	}
	return out, nil
}

// FirstDateCache is a ContextReader that keeps each pipeline's first
// business date (Store.FirstDates) instead of reading every pipeline's
// history up to the range's end per request, which grew with the
// estate: the all-pipelines day of a year of 1,000 pipelines spent most
// of its ClickHouse time there. Its Census reads only the range
// [ReadFrom, To] (the rows Census counts, and the earliest date of each
// pipeline within it) and takes the earlier of that and the cached date.
//
// The rule (docs/serve.md, "Caches"): everything in the range is read per
// call, so a new batch, a new pipeline and an earlier date within the
// range show at once. Only events stored with a business date before the
// read's range and before a pipeline's cached first date (history loaded
// into the past) move where that pipeline starts without the call seeing
// it; the cached dates are read again once they are TTL old (the call
// that finds them so starts the read and, meanwhile, uses them), and a
// call never uses dates read more than TTL + Grace ago: it waits for the
// read instead. So a first date is at most TTL + Grace old.
type FirstDateCache struct {
	store *Store
	// TTL is how long the dates are used before they are read again.
	TTL time.Duration
	// Grace is how much longer they are used while a read runs (the
	// reader's query timeout: the longest a read may take).
	Grace time.Duration
	// Clock tells the age of the dates (default time.Now): the wall
	// clock, not the as-of time of the diagnoses.
	Clock func() time.Time
	// QueryContext gives the context of the read of the dates, detached
	// from the call that starts it (default: a deadline of Grace).
	QueryContext func(context.Context) (context.Context, context.CancelFunc)

	mu     sync.Mutex
	dates  map[string]model.Date
	readAt time.Time // when the read of dates started
	flight *firstDatesRead
}

// firstDatesRead is a read of the first dates under way.
type firstDatesRead struct {
	done chan struct{}
	err  error
}

// NewFirstDateCache returns a cache of s's first dates used for ttl, and
// for grace more while they are read again.
func NewFirstDateCache(s *Store, ttl, grace time.Duration) *FirstDateCache {
	return &FirstDateCache{store: s, TTL: ttl, Grace: grace}
}

func (c *FirstDateCache) now() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}

// Dates returns each pipeline's first business date, as of at most TTL +
// Grace ago (see FirstDateCache). The map is shared: do not change it.
func (c *FirstDateCache) Dates(ctx context.Context) (map[string]model.Date, error) {
	c.mu.Lock()
	age := c.now().Sub(c.readAt)
	if c.dates != nil && age < c.TTL {
		d := c.dates
		c.mu.Unlock()
		return d, nil
	}
	if c.flight == nil {
		c.flight = &firstDatesRead{done: make(chan struct{})}
		go c.read(context.WithoutCancel(ctx), c.flight)
	}
	fl, d := c.flight, c.dates
	c.mu.Unlock()
	if d != nil && age < c.TTL+c.Grace {
		return d, nil
	}
	select {
	case <-fl.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if fl.err != nil {
		return nil, fl.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dates, nil
}

// read reads the dates into c and ends fl.
func (c *FirstDateCache) read(ctx context.Context, fl *firstDatesRead) {
	start := c.now()
	qctx, cancel := c.queryContext(ctx)
	dates, err := c.store.FirstDates(qctx)
	cancel()
	c.mu.Lock()
	if err == nil {
		c.dates, c.readAt = dates, start
	}
	fl.err = err
	c.flight = nil
	c.mu.Unlock()
	close(fl.done)
}

func (c *FirstDateCache) queryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.QueryContext != nil {
		return c.QueryContext(ctx)
	}
	grace := c.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	return context.WithTimeout(ctx, grace)
}

// Census is Store.Census with the first dates from the cache: the stored
// rows of [f.ReadFrom, f.To] are counted per call, and a pipeline's First
// is the earlier of its cached date and its earliest date in that range.
func (c *FirstDateCache) Census(ctx context.Context, f CensusFilter) ([]PipelineRows, error) {
	if f.From.IsZero() || f.To.IsZero() || f.ReadFrom.IsZero() {
		return nil, fmt.Errorf("store census: from, to and read-from dates are required")
	}
	type datesResult struct {
		dates map[string]model.Date
		err   error
	}
	dc := make(chan datesResult, 1)
	go func() {
		d, err := c.Dates(ctx)
		dc <- datesResult{d, err}
	}()
	inRange, err := c.store.rangeCensus(ctx, f)
	dr := <-dc
	if err != nil {
		return nil, err
	}
	if dr.err != nil {
		return nil, dr.err
	}
	return mergeCensus(inRange, dr.dates, f, nil, true), nil
}

// CensusOf is Census from the rows of [f.ReadFrom, f.To] the caller
// counted itself while it read them (RangeCount), with the cached first
// dates: a read of the range's events then needs no census query of its
// own. Its Rows count events read, not stored rows.
func (c *FirstDateCache) CensusOf(ctx context.Context, seen *RangeCount, f CensusFilter) ([]PipelineRows, error) {
	dates, err := c.Dates(ctx)
	if err != nil {
		return nil, err
	}
	return mergeCensus(seen.rows, dates, f, nil, true), nil
}

// CensusOfShard is CensusOf of the pipelines keep accepts only, in no
// particular order: for a caller that gives each its first date and
// heartbeats and nothing else (Assemble, Context.AddTo), such as a shard
// of serve's all-pipelines lists, which counts its own pipelines' rows.
// The sort of 10,000 names a request was most of the census's time.
func (c *FirstDateCache) CensusOfShard(ctx context.Context, seen *RangeCount, f CensusFilter, keep func(pipeline string) bool) ([]PipelineRows, error) {
	dates, err := c.Dates(ctx)
	if err != nil {
		return nil, err
	}
	return mergeCensus(seen.rows, dates, f, keep, false), nil
}

// RangeCount counts, per pipeline, the batch events of a read of [ReadFrom,
// To] as Census does: for FirstDateCache.CensusOf. The counts are kept in
// one slice, in the order the pipelines were first read, with an index by
// name: no record on the heap for each of an all-pipelines day's 10,000.
type RangeCount struct {
	from  model.Date
	rows  []PipelineRows
	index map[string]int32
	last  int32 // rows' index of the pipeline of the event before, -1: none
}

// NewRangeCount counts the events of a read whose range asked starts at
// from (PipelineRows.InRange counts those from there on), of about
// pipelines pipelines (a hint: 0 for unknown).
func NewRangeCount(from model.Date, pipelines int) *RangeCount {
	return &RangeCount{from: from, index: make(map[string]int32, pipelines), rows: make([]PipelineRows, 0, pipelines), last: -1}
}

// Pipelines is how many pipelines the cached dates name (0 before the
// first read): the size of an all-pipelines read, for NewRangeCount.
func (c *FirstDateCache) Pipelines() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.dates)
}

// Add counts e, a batch event read.
func (r *RangeCount) Add(e *model.Event) {
	i := r.last
	if i < 0 || r.rows[i].Pipeline != e.Pipeline {
		j, ok := r.index[e.Pipeline]
		if !ok {
			j = int32(len(r.rows))
			r.rows = append(r.rows, PipelineRows{Pipeline: e.Pipeline, First: e.BusinessDate})
			r.index[e.Pipeline] = j
		}
		i, r.last = j, j
	}
	p := &r.rows[i]
	p.Rows++
	if e.BusinessDate.Compare(r.from) >= 0 {
		p.InRange++
	}
	if e.BusinessDate.Compare(p.First) < 0 {
		p.First = e.BusinessDate
	}
}

// mergeCensus is Census's answer from the pipelines with rows in
// [ReadFrom, To] (First: the earliest date there) and the first dates
// over the whole table: the pipelines with rows in [From, To], and the
// scheduled ones whose history starts by To, in pipeline order when
// sorted, of those keep accepts (nil: all).
func mergeCensus(inRange []PipelineRows, first map[string]model.Date, f CensusFilter, keep func(string) bool, sorted bool) []PipelineRows {
	out := make([]PipelineRows, 0, len(inRange))
	// seen is only asked about scheduled pipelines: without any, the
	// all-pipelines day's 10,000 names need not go into it.
	var seen map[string]bool
	if len(f.Scheduled) > 0 {
		seen = make(map[string]bool, len(inRange)+len(f.Scheduled))
	}
	for _, p := range inRange {
		if seen != nil {
			seen[p.Pipeline] = true
		}
		if keep != nil && !keep(p.Pipeline) {
			continue
		}
		if d, ok := first[p.Pipeline]; ok && d.Compare(p.First) < 0 {
			p.First = d
		}
		if p.InRange == 0 && !slices.Contains(f.Scheduled, p.Pipeline) {
			continue
		}
		out = append(out, p)
	}
	for _, name := range f.Scheduled {
		d, ok := first[name]
		if !ok || seen[name] || d.Compare(f.To) > 0 || keep != nil && !keep(name) {
			continue
		}
		if len(f.Pipelines) > 0 && !slices.Contains(f.Pipelines, name) {
			continue
		}
		seen[name] = true
		out = append(out, PipelineRows{Pipeline: name, First: d})
	}
	if !sorted {
		return out
	}
	byName := func(a, b PipelineRows) int { return strings.Compare(a.Pipeline, b.Pipeline) }
	if !slices.IsSortedFunc(out, byName) {
		slices.SortFunc(out, byName)
	}
	return out
}

// LatestHeartbeats is the store's: heartbeats are read per call.
func (c *FirstDateCache) LatestHeartbeats(ctx context.Context, pipelines []string, asOf time.Time) ([]model.Event, error) {
	return c.store.LatestHeartbeats(ctx, pipelines, asOf)
}

// rangeCensus counts, per pipeline of f.Pipelines (nil: all) with batch
// events in [f.ReadFrom, f.To], its stored rows there (Rows), those in
// [f.From, f.To] (InRange) and its earliest date there (First), in
// pipeline order: the primary key columns of the range's partitions only.
func (s *Store) rangeCensus(ctx context.Context, f CensusFilter) ([]PipelineRows, error) {
	w := batchWhere("", f.ReadFrom, f.To)
	if len(f.Pipelines) > 0 {
		w.in("pipeline", f.Pipelines)
	}
	args := append([]any{f.From.String()}, w.args...)
	return s.census(ctx, "SELECT pipeline, min(business_date), count(), countIf(business_date >= toDate(?)) FROM "+
		s.events()+" WHERE "+w.String()+" GROUP BY pipeline ORDER BY pipeline", args, nil)
}

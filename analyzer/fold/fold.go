// Package fold turns a stream of delivery events into the diagnoses of
// every batch, pipeline by pipeline, in batch-key order. diagnose uses it
// over a file and over ClickHouse; it is shaped for the backfill to come,
// which will feed it ClickHouse rows in pipeline and date order.
//
// Events are folded into one batches.Set per pipeline: everything a Set
// computes across batches (continuity with the previous batch, the first
// business date, heartbeats) is per pipeline, so the diagnoses equal those
// of a single Set over all events. Each pipeline is then cut into pieces
// (the whole pipeline, or windows of its sorted keys when it is large),
// diagnosed and rendered in parallel, and handed to the caller in order.
//
// Memory: with input in any order the fold holds every pipeline until
// Finish. With input grouped by pipeline (Options.Grouped; ClickHouse
// reads in its sort key order, pipeline first) a pipeline is diagnosed as
// soon as the next one starts and freed once its pieces are handed over,
// so the fold holds one pipeline plus the pieces in flight.
//
// The package is pure: no I/O; goroutines only compute, and the caller's
// yield runs on the caller's goroutine (inside Add or Finish).
package fold

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
)

// DefaultWindow is the most batches one piece holds unless Options.Window
// says otherwise: small enough that a piece's diagnoses stay a few MiB,
// large enough that the per-piece overhead does not show.
const DefaultWindow = 8192

// Options tunes a Fold. The zero value is usable.
type Options struct {
	// Grouped declares that events arrive grouped by pipeline (every event
	// of a pipeline before the first of the next). A pipeline is then
	// diagnosed as soon as the next begins, and an event of a pipeline
	// already done is an error. Pipelines are handed over in the order
	// they arrive: batch key order needs them by name, as ClickHouse's
	// sort key (pipeline first) gives them. Within a pipeline the order
	// of events does not matter.
	Grouped bool
	// Workers diagnose and render pieces in parallel; zero means
	// GOMAXPROCS.
	Workers int
	// Window is the most batches in a piece; zero means DefaultWindow.
	Window int
	// From: batches of business dates before From are folded for
	// continuity only (the context of a range read from ContextStart);
	// they are not diagnosed nor handed over. Zero: every batch is.
	From model.Date
	// To, when not zero, is the last business date the input covers (a
	// read of a range): absent expected batches are reported from From up
	// to it only (batches.Set.Covers). Zero: the input is the whole
	// history, every pipeline's calendar runs to the as-of time.
	To model.Date
	// First, when not nil, gives a pipeline's earliest business date in
	// the whole history when the input starts later (batches.Set.Known).
	First func(pipeline string) (model.Date, bool)
	// Upstreams, when not nil, answers the upstream rule (analyzer/upstream)
	// with what was read beforehand of the pipelines others wait for
	// (grouped input, which frees each pipeline as the next begins). Nil
	// with input in any order: the fold holds every pipeline until Finish
	// and answers the rule from them.
	Upstreams upstream.Batches
}

// Fold folds events and hands the rendered diagnoses to yield, in batch
// key order. T is what render makes of a piece (encoded bytes, counts, or
// the diagnoses themselves); render runs on the workers, yield on the
// caller's goroutine. A Fold is not safe for concurrent use.
type Fold[T any] struct {
	ctx       context.Context
	contracts batches.Contracts
	asOf      time.Time
	opts      Options
	render    func([]replay.Diagnosis) T
	yield     func(T) error

	sets     map[string]*batches.Set
	cur      *batches.Set // the set of the previous event, often the same
	curName  string
	done     map[string]bool // Grouped: pipelines already diagnosed
	batches  int
	finished bool

	todo    chan *piece[T]
	pending []*piece[T] // submitted, not yet yielded, in order
	err     error       // the first error of yield or ctx; sticky
}

// piece is one run of batches of one pipeline.
type piece[T any] struct {
	set  *batches.Set
	keys []model.BatchKey
	out  T
	done chan struct{}
}

// New returns a Fold diagnosing as of asOf under contracts. Its workers
// stop when ctx is done (then Add and Finish return ctx's error) or when
// Finish has handed everything over: a caller that gives up before Finish
// cancels ctx.
func New[T any](ctx context.Context, contracts batches.Contracts, asOf time.Time, opts Options,
	render func([]replay.Diagnosis) T, yield func(T) error) *Fold[T] {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	f := &Fold[T]{ctx: ctx, contracts: contracts, asOf: asOf, opts: opts, render: render, yield: yield,
		sets: make(map[string]*batches.Set), done: make(map[string]bool)}
	f.todo = make(chan *piece[T], f.inFlight())
	for range opts.Workers {
		go f.work()
	}
	return f
}

// inFlight bounds the pieces submitted but not yet yielded: it bounds the
// memory of rendered output waiting for an earlier piece.
func (f *Fold[T]) inFlight() int { return 2 * f.opts.Workers }

func (f *Fold[T]) work() {
	for {
		select {
		case <-f.ctx.Done():
			return
		case pc, ok := <-f.todo:
			if !ok {
				return
			}
			pc.out = f.render(pc.set.DiagnoseKeys(pc.keys))
			close(pc.done)
		}
	}
}

// Add folds one event in. With Options.Grouped, the first event of a new
// pipeline diagnoses the previous one, and yield may run.
func (f *Fold[T]) Add(e *model.Event) error {
	if f.cur != nil && e.Pipeline == f.curName {
		f.cur.Add(e)
		return nil
	}
	if f.finished {
		return fmt.Errorf("fold: event %s added after Finish", e.ID)
	}
	if f.opts.Grouped {
		if f.done[e.Pipeline] {
			return fmt.Errorf("fold: event %s of pipeline %q comes after pipeline %q: the input is not grouped by pipeline (sort it, or do not declare it grouped)",
				e.ID, e.Pipeline, f.curName)
		}
		if f.cur != nil {
			f.done[f.curName] = true
			if err := f.submit(f.curName); err != nil {
				return err
			}
		}
	}
	s := f.sets[e.Pipeline]
	if s == nil {
		s = batches.New(f.contracts, f.asOf)
		if !f.opts.From.IsZero() || !f.opts.To.IsZero() {
			s.Covers(f.opts.From, f.opts.To)
		}
		if f.opts.First != nil {
			if d, ok := f.opts.First(e.Pipeline); ok {
				s.Known(e.Pipeline, d)
			}
		}
		if f.opts.Upstreams != nil {
			s.Upstreams(f.opts.Upstreams)
		}
		f.sets[e.Pipeline] = s
	}
	f.cur, f.curName = s, e.Pipeline
	s.Add(e)
	return nil
}

// Finish diagnoses every pipeline not yet diagnosed (with Grouped, the
// last one), in name order, and
// returns once yield has had every piece. It returns the first error of
// yield, or ctx's.
func (f *Fold[T]) Finish() error {
	if f.finished {
		return f.err
	}
	f.finished = true
	defer close(f.todo) // the workers finish what is queued and exit
	names := make([]string, 0, len(f.sets))
	for name := range f.sets {
		names = append(names, name)
	}
	slices.Sort(names)
	f.upstreams(names)
	for _, name := range names {
		if err := f.submit(name); err != nil {
			return err
		}
	}
	for len(f.pending) > 0 {
		if err := f.yieldFirst(); err != nil {
			return err
		}
	}
	return nil
}

// upstreams gives every held set the upstream rule, answered from the
// held sets of the pipelines others wait for, when the input was not
// grouped (every pipeline is held now) and the contracts list upstreams.
func (f *Fold[T]) upstreams(names []string) {
	if f.opts.Grouped || f.opts.Upstreams != nil {
		return
	}
	l, ok := f.contracts.(upstream.Lister)
	if !ok {
		return
	}
	g := upstream.NewGraph(l)
	if g.Empty() {
		return
	}
	tb := new(upstream.Table)
	for _, p := range g.Needs(names) {
		s := f.sets[p]
		if s == nil {
			continue
		}
		if d, ok := s.First(p); ok {
			tb.Known(p, d)
		}
		for _, d := range s.Diagnose(nil) {
			_ = tb.Add(&d) // the set's own keys parse
		}
	}
	for _, s := range f.sets {
		s.Upstreams(tb)
	}
}

// Batches returns how many batches were handed to the workers so far
// (every batch, after Finish).
func (f *Fold[T]) Batches() int { return f.batches }

// submit cuts pipeline name into pieces, queues them, and forgets the
// pipeline: the pieces hold its set until they are yielded.
func (f *Fold[T]) submit(name string) error {
	s := f.sets[name]
	delete(f.sets, name)
	f.cur, f.curName = nil, ""
	// The keys are those with events and the absent expected batches
	// (batches.Set.Keys; a pipeline of heartbeats only has absent batches
	// when its history is known to start earlier: Options.First), sorted
	// once and cut into windows.
	keys := s.Keys()
	if !f.opts.From.IsZero() {
		from := f.opts.From
		// One pipeline: the keys are in date order.
		keys = keys[sort.Search(len(keys), func(i int) bool { return keys[i].BusinessDate.Compare(from) >= 0 }):]
	}
	n := len(keys)
	if n == 0 { // context only
		return nil
	}
	f.batches += n
	for i := 0; i < n; i += f.opts.Window {
		if err := f.queue(&piece[T]{set: s, keys: keys[i:min(i+f.opts.Window, n)]}); err != nil {
			return err
		}
	}
	return nil
}

// queue hands pc to the workers, first yielding what is ready and, when
// inFlight pieces wait, the oldest (waiting for it).
func (f *Fold[T]) queue(pc *piece[T]) error {
	if f.stopped() {
		return f.err
	}
	for len(f.pending) > 0 && (len(f.pending) >= f.inFlight() || isDone(f.pending[0])) {
		if err := f.yieldFirst(); err != nil {
			return err
		}
	}
	pc.done = make(chan struct{})
	f.pending = append(f.pending, pc)
	select {
	case f.todo <- pc: // never blocks: pending bounds what todo holds
	case <-f.ctx.Done():
		f.err = f.ctx.Err()
	}
	return f.err
}

// yieldFirst waits for the oldest pending piece and yields it.
func (f *Fold[T]) yieldFirst() error {
	if f.stopped() {
		return f.err
	}
	pc := f.pending[0]
	select {
	case <-pc.done:
	case <-f.ctx.Done():
		f.err = f.ctx.Err()
		return f.err
	}
	f.pending[0] = nil
	f.pending = f.pending[1:]
	if err := f.yield(pc.out); err != nil {
		f.err = err
	}
	return f.err
}

// stopped reports whether the fold has failed or been cancelled, so that
// a cancelled fold stops at once rather than when a select happens to see
// it.
func (f *Fold[T]) stopped() bool {
	if f.err == nil {
		f.err = f.ctx.Err()
	}
	return f.err != nil
}

func isDone[T any](pc *piece[T]) bool {
	select {
	case <-pc.done:
		return true
	default:
		return false
	}
}

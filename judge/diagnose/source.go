package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconfig"
	"github.com/handoff-dev/handoff/store/history"
)

// Source feeds a source's events to the fold, handing the input it
// rejects to the Reporter: a file of JSON lines, or ClickHouse. Another
// source is a type with these methods and a case in OpenSource.
type Source interface {
	// Name says where the events come from, as bad-line reports and
	// errors name it.
	Name() string
	// Grouped reports whether the events come grouped by pipeline, so
	// that each pipeline can be diagnosed and freed as soon as the next
	// begins.
	Grouped() bool
	Feed(ctx context.Context, add func(*model.Event) error, rep *Reporter) error
	// Scope says which of the batches fed to diagnose and where each
	// pipeline's history starts, when the source feeds more than the
	// batches asked for (a range read with its context) or starts later
	// than the history.
	Scope() Scope
}

// Scope is what a source knows beyond its events.
type Scope struct {
	// From: batches of earlier business dates are fed for continuity only,
	// not diagnosed (zero: every batch is).
	From model.Date
	// To: the last business date the source covers (zero: the whole
	// history), which bounds the calendar of absent expected batches.
	To model.Date
	// First holds pipelines' earliest business date in the whole history
	// (batches.Set.Known).
	First map[string]model.Date
	// Upstreams is what was read of the pipelines these wait for (the
	// upstream rule's input); nil: read with the events (a file), or no
	// contract lists an upstream.
	Upstreams upstream.Batches
}

// FirstOf answers fold.Options.First.
func (sc Scope) FirstOf(pipeline string) (model.Date, bool) {
	d, ok := sc.First[pipeline]
	return d, ok
}

// SourceConfig says where the events are: a file (Events, "-" for the
// standard input) or, when ClickHouse is set, the stored history of one
// pipeline (Pipeline, From, To: business dates YYYY-MM-DD or empty).
type SourceConfig struct {
	Events     string
	ClickHouse *chconfig.Service
	Pipeline   string
	From, To   string
}

// OpenSource opens the source cfg names. contracts and asOf are those of
// the diagnoses: ClickHouse reads the context of a range under them.
func OpenSource(ctx context.Context, cfg SourceConfig, stdin io.Reader, only model.BatchKey, contracts *contract.Set, asOf time.Time) (Source, error) {
	switch {
	case cfg.ClickHouse != nil && cfg.Events != "":
		return nil, exitcode.Usagef("--events and --clickhouse-addr are exclusive: read from one source")
	case cfg.ClickHouse != nil:
		return openClickHouse(ctx, cfg, only, contracts, asOf)
	case cfg.Pipeline != "" || cfg.From != "" || cfg.To != "":
		return nil, exitcode.Usagef("--pipeline, --from and --to select what to read from ClickHouse: use them with --clickhouse-addr ADDR")
	case cfg.Events == "":
		return nil, exitcode.Usagef("--events FILE|- is required (or HANDOFF_EVENTS)")
	case cfg.Events == "-":
		return &fileSource{label: "stdin", r: stdin}, nil
	}
	f, err := os.Open(cfg.Events)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, exitcode.Usagef("--events: %v", err)
		}
		return nil, err
	}
	// The file stays open until the process exits: diagnose runs once.
	return &fileSource{label: cfg.Events, r: f, closer: f}, nil
}

// fileSource reads JSON lines.
type fileSource struct {
	label  string
	r      io.Reader
	closer io.Closer
}

func (s *fileSource) Name() string { return s.label }

// Grouped: a file may hold its events in any order.
func (s *fileSource) Grouped() bool { return false }

// Scope: a file is the whole history it has.
func (s *fileSource) Scope() Scope { return Scope{} }

func (s *fileSource) Feed(ctx context.Context, add func(*model.Event) error, rep *Reporter) error {
	if s.closer != nil {
		defer s.closer.Close()
	}
	st, err := jsonl.Read(ctx, s.r, jsonl.Options{}, func(line int, e *model.Event, err error) error {
		if err != nil {
			return rep.bad(line, err)
		}
		if !e.Type.HasBatch() {
			rep.sum.heartbeats++
		}
		rep.tick(line)
		return add(e)
	})
	rep.sum.lines = st.Lines
	rep.sum.events = st.Events
	rep.sum.blank = st.Blank
	if err != nil {
		var ee *exitcode.Error
		if errors.As(err, &ee) || errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("%s: %w", s.label, err)
	}
	return nil
}

// openClickHouse opens the ClickHouse source: one pipeline (optionally a
// range of business dates), or the pipeline of --batch, read over the
// window readWindow decides.
func openClickHouse(ctx context.Context, cfg SourceConfig, only model.BatchKey, contracts *contract.Set, asOf time.Time) (Source, error) {
	var from, to model.Date
	for _, d := range []struct {
		flag, v string
		to      *model.Date
	}{{"from", cfg.From, &from}, {"to", cfg.To, &to}} {
		if d.v == "" {
			continue
		}
		date, err := model.ParseDate(d.v)
		if err != nil {
			return nil, exitcode.Usagef("--%s %q: %v", d.flag, d.v, err)
		}
		*d.to = date
	}
	pipeline := cfg.Pipeline
	if !only.IsZero() {
		if pipeline != "" && pipeline != only.Pipeline {
			return nil, exitcode.Usagef("--pipeline %s and --batch %s name different pipelines", pipeline, only)
		}
		pipeline = only.Pipeline
		if from.IsZero() && to.IsZero() {
			// The batch alone; its context brings its previous batch.
			from, to = only.BusinessDate, only.BusinessDate
		}
	}
	if !from.IsZero() && !to.IsZero() && to.Compare(from) < 0 {
		return nil, exitcode.Usagef("--to %s is before --from %s", to, from)
	}
	ch := cfg.ClickHouse
	if err := ch.Check(); err != nil {
		return nil, exitcode.Usagef("%v", err)
	}
	if pipeline == "" {
		return nil, exitcode.Usagef("--clickhouse-addr needs --pipeline P (optionally --from/--to) or --batch KEY: handoff reads one pipeline at a time")
	}
	conn, err := ch.Open(ctx)
	if err != nil {
		return nil, err
	}
	st, err := history.New(conn, ch.Database)
	if err != nil {
		conn.Close()
		return nil, exitcode.Usagef("--clickhouse-database: %v", err)
	}
	label := fmt.Sprintf("clickhouse %s/%s.events pipeline %s", ch.Addr, ch.Database, pipeline)
	w, err := readWindow(ctx, st, contracts, pipeline, from, to, asOf)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	if w.Empty && !only.IsZero() {
		conn.Close()
		return nil, exitcode.Usagef("--batch %s: no events of that batch in %s: check the key and --clickhouse-database", only, label)
	}
	if w.Empty {
		conn.Close()
		return nil, exitcode.Usagef("--pipeline %s: no batch event %s in %s: check the name, the dates and --clickhouse-database", pipeline, w.Range(), label)
	}
	ups, err := history.ReadUpstreams(ctx, st, history.ContextRequest{Pipelines: []string{pipeline}, From: w.from, To: w.to, AsOf: asOf, Contracts: contracts})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	if ups != nil {
		w.Scope.Upstreams = ups
	}
	return &clickhouseSource{label: label, st: st, close: conn.Close, heartbeats: w.Heartbeats, filter: w.Filter, sc: w.Scope, pipeline: pipeline}, nil
}

// window is what a read of one pipeline's stored history covers: the
// rows to read, the heartbeats to feed first, and the scope of the
// diagnoses.
type window struct {
	Filter     history.Filter
	Heartbeats []model.Event
	Scope      Scope
	// Empty: the pipeline has no batch event in the range asked for.
	Empty    bool
	from, to model.Date
}

// Range says which business dates were asked for.
func (w *window) Range() string {
	switch {
	case w.from == history.FirstStorable && w.to == history.LastStorable:
		return "at all"
	case w.from == w.to:
		return "on " + w.from.String()
	}
	return "from " + w.from.String() + " to " + w.to.String()
}

// readWindow decides the window of history the diagnoses of pipeline's
// batches of [from, to] (zero: the storable range) need as of asOf, by the
// one rule every reader of the history follows (history.ReadContext), so
// that diagnose, backfill, serve and the detector give the same diagnoses.
// Empty: the pipeline has no history at all (a pipeline with history but
// no event in range still has its expected batches to report).
func readWindow(ctx context.Context, st *history.Store, contracts *contract.Set, pipeline string, from, to model.Date, asOf time.Time) (*window, error) {
	if from.IsZero() {
		from = history.FirstStorable
	}
	if to.IsZero() {
		to = history.LastStorable
	}
	cx, err := history.ReadContext(ctx, st, history.ContextRequest{Pipelines: []string{pipeline}, From: from, To: to, AsOf: asOf, Contracts: contracts})
	if err != nil {
		return nil, err
	}
	w := &window{Heartbeats: cx.Heartbeats, Filter: cx.Filter(pipeline), Scope: Scope{From: from, To: to}, from: from, to: to}
	first, ok := cx.First(pipeline)
	if !ok {
		w.Empty = true
		w.Filter.From, w.Filter.To = from, to
		return w, nil
	}
	w.Scope.First = map[string]model.Date{pipeline: first}
	return w, nil
}

// clickhouseSource reads stored events; they were validated on ingest, so
// nothing is rejected here.
type clickhouseSource struct {
	label  string
	st     *history.Store
	filter history.Filter
	// heartbeats are the pipeline's latest, as of the diagnoses, fed first.
	heartbeats []model.Event
	sc         Scope
	close      func() error
	pipeline   string
}

// LearnWindow reads the pipeline's events of the baselines' window as of
// asOf (history.BaselineWindow: the 28 business dates before its UTC day) into
// learn, as backfill's first read does, so that a range that does not
// cover the window shows the same baselines as backfill and detect.
func (s *clickhouseSource) LearnWindow(ctx context.Context, asOf time.Time, learnEvent func(*model.Event)) error {
	if err := s.st.EachEvent(ctx, history.BaselineWindow(s.pipeline, asOf), func(e model.Event) error { learnEvent(&e); return nil }); err != nil {
		return fmt.Errorf("%s: read the baselines' window: %w", s.label, err)
	}
	return nil
}

func (s *clickhouseSource) Name() string { return s.label }

// Grouped: the store reads one pipeline, in its sort key order.
func (s *clickhouseSource) Grouped() bool { return true }

func (s *clickhouseSource) Scope() Scope { return s.sc }

func (s *clickhouseSource) Feed(ctx context.Context, add func(*model.Event) error, rep *Reporter) error {
	defer s.close()
	n := 0
	each := func(e model.Event) error {
		n++
		if !e.Type.HasBatch() {
			rep.sum.heartbeats++
		}
		rep.tick(n)
		return add(&e)
	}
	var err error
	for i := 0; i < len(s.heartbeats) && err == nil; i++ {
		err = each(s.heartbeats[i])
	}
	if err == nil {
		err = s.st.EachEvent(ctx, s.filter, each)
	}
	rep.sum.lines = n
	rep.sum.events = n
	if err != nil {
		return fmt.Errorf("%s: %w", s.label, err)
	}
	return nil
}

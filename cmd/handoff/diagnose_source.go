package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/schema"
)

// eventSource feeds a source's events to the fold, handing the input it
// rejects to rep: a file of JSON lines, or ClickHouse. Another source is a
// type with these methods and a case in openSource.
type eventSource interface {
	// name says where the events come from, as bad-line reports and
	// errors name it.
	name() string
	// grouped reports whether the events come grouped by pipeline, so
	// that each pipeline can be diagnosed and freed as soon as the next
	// begins.
	grouped() bool
	feed(ctx context.Context, add func(*model.Event) error, rep *reporter) error
	// scope says which of the batches fed to diagnose and where each
	// pipeline's history starts, when the source feeds more than the
	// batches asked for (a range read with its context) or starts later
	// than the history.
	scope() sourceScope
}

// sourceScope is what a source knows beyond its events.
type sourceScope struct {
	// from: batches of earlier business dates are fed for continuity only,
	// not diagnosed (zero: every batch is).
	from model.Date
	// to: the last business date the source covers (zero: the whole
	// history), which bounds the calendar of absent expected batches.
	to model.Date
	// first holds pipelines' earliest business date in the whole history
	// (batches.Set.Known).
	first map[string]model.Date
}

// firstOf answers fold.Options.First.
func (sc sourceScope) firstOf(pipeline string) (model.Date, bool) {
	d, ok := sc.first[pipeline]
	return d, ok
}

// openSource opens the source cfg names. contracts and asOf are those of
// the diagnoses: ClickHouse reads the context of a range under them.
func openSource(ctx context.Context, cfg diagnoseConfig, stdin io.Reader, only model.BatchKey, contracts *contract.Set, asOf time.Time) (eventSource, error) {
	switch {
	case cfg.ClickHouse != "" && cfg.Events != "":
		return nil, usageError("--events and --clickhouse are exclusive: read from one source")
	case cfg.ClickHouse != "":
		return openClickHouse(ctx, cfg, only, contracts, asOf)
	case cfg.Pipeline != "" || cfg.From != "" || cfg.To != "":
		return nil, usageError("--pipeline, --from and --to select what to read from ClickHouse: use them with --clickhouse ADDR")
	case cfg.Events == "":
		return nil, usageError("--events FILE|- is required (or HANDOFF_EVENTS)")
	case cfg.Events == "-":
		return &fileSource{label: "stdin", r: stdin}, nil
	}
	f, err := os.Open(cfg.Events)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usageError("--events: %v", err)
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

func (s *fileSource) name() string { return s.label }

// grouped: a file may hold its events in any order.
func (s *fileSource) grouped() bool { return false }

// scope: a file is the whole history it has.
func (s *fileSource) scope() sourceScope { return sourceScope{} }

func (s *fileSource) feed(ctx context.Context, add func(*model.Event) error, rep *reporter) error {
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
		var ee *exitError
		if errors.As(err, &ee) || errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("%s: %w", s.label, err)
	}
	return nil
}

// openClickHouse opens the ClickHouse source: one pipeline (optionally a
// range of business dates, by default the storable range), or the
// pipeline of --batch. It reads the range's context as every reader of
// the history does (history.ReadContext), so that diagnose and backfill
// give the same diagnoses.
func openClickHouse(ctx context.Context, cfg diagnoseConfig, only model.BatchKey, contracts *contract.Set, asOf time.Time) (eventSource, error) {
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
			return nil, usageError("--%s %q: %v", d.flag, d.v, err)
		}
		*d.to = date
	}
	pipeline := cfg.Pipeline
	if !only.IsZero() {
		if pipeline != "" && pipeline != only.Pipeline {
			return nil, usageError("--pipeline %s and --batch %s name different pipelines", pipeline, only)
		}
		pipeline = only.Pipeline
		if from.IsZero() && to.IsZero() {
			// The batch alone; its context brings its previous batch.
			from, to = only.BusinessDate, only.BusinessDate
		}
	}
	if from.IsZero() {
		from = history.FirstStorable
	}
	if to.IsZero() {
		to = history.LastStorable
	}
	if to.Compare(from) < 0 {
		return nil, usageError("--to %s is before --from %s", to, from)
	}
	if err := schema.CheckDatabase(cfg.Database); err != nil {
		return nil, usageError("--database: %v", err)
	}
	if pipeline == "" {
		return nil, usageError("--clickhouse needs --pipeline P (optionally --from/--to) or --batch KEY: handoff reads one pipeline at a time")
	}
	conn, err := chconn.Open(ctx, chconn.Config{Addr: cfg.ClickHouse, User: cfg.User, Password: cfg.Password})
	if err != nil {
		return nil, err
	}
	st, err := history.New(conn, cfg.Database)
	if err != nil {
		conn.Close()
		return nil, usageError("--database: %v", err)
	}
	label := fmt.Sprintf("clickhouse %s/%s.events pipeline %s", cfg.ClickHouse, cfg.Database, pipeline)
	cx, err := history.ReadContext(ctx, st, history.ContextRequest{Pipelines: []string{pipeline}, From: from, To: to, AsOf: asOf, Contracts: contracts})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	src := &clickhouseSource{label: label, st: st, close: conn.Close, heartbeats: cx.Heartbeats,
		filter: cx.Filter(pipeline), sc: sourceScope{from: from, to: to}}
	if first, ok := cx.First(pipeline); ok {
		src.sc.first = map[string]model.Date{pipeline: first}
	} else {
		// No history: nothing to read (a read from ReadFrom would diagnose
		// nothing either).
		src.filter.From, src.filter.To = from, to
	}
	return src, nil
}

// clickhouseSource reads stored events; they were validated on ingest, so
// nothing is rejected here.
type clickhouseSource struct {
	label  string
	st     *history.Store
	filter history.Filter
	// heartbeats are the pipeline's latest, as of the diagnoses, fed first.
	heartbeats []model.Event
	sc         sourceScope
	close      func() error
}

func (s *clickhouseSource) name() string { return s.label }

// grouped: the store reads one pipeline, in its sort key order.
func (s *clickhouseSource) grouped() bool { return true }

func (s *clickhouseSource) scope() sourceScope { return s.sc }

func (s *clickhouseSource) feed(ctx context.Context, add func(*model.Event) error, rep *reporter) error {
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

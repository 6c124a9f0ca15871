package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/handoff-dev/handoff/ingest/chconn"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/store"
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
}

func openSource(ctx context.Context, cfg diagnoseConfig, stdin io.Reader, only model.BatchKey) (eventSource, error) {
	switch {
	case cfg.ClickHouse != "" && cfg.Events != "":
		return nil, usageError("--events and --clickhouse are exclusive: read from one source")
	case cfg.ClickHouse != "":
		return openClickHouse(ctx, cfg, only)
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
// range of business dates), or the pipeline of --batch around its date.
func openClickHouse(ctx context.Context, cfg diagnoseConfig, only model.BatchKey) (eventSource, error) {
	f := store.Filter{Pipeline: cfg.Pipeline, Heartbeats: true}
	for _, d := range []struct {
		flag, v string
		to      *model.Date
	}{{"from", cfg.From, &f.From}, {"to", cfg.To, &f.To}} {
		if d.v == "" {
			continue
		}
		date, err := model.ParseDate(d.v)
		if err != nil {
			return nil, usageError("--%s %q: %v", d.flag, d.v, err)
		}
		*d.to = date
	}
	if !only.IsZero() {
		if f.Pipeline != "" && f.Pipeline != only.Pipeline {
			return nil, usageError("--pipeline %s and --batch %s name different pipelines", f.Pipeline, only)
		}
		f.Pipeline = only.Pipeline
		if f.From.IsZero() && f.To.IsZero() {
			// The week before the batch holds its previous batch under any
			// daily or weekday schedule: continuity needs it.
			f.From, f.To = only.BusinessDate.AddDays(-7), only.BusinessDate
		}
	}
	if err := schema.CheckDatabase(cfg.Database); err != nil {
		return nil, usageError("--database: %v", err)
	}
	if f.Pipeline == "" {
		return nil, usageError("--clickhouse needs --pipeline P (optionally --from/--to) or --batch KEY: handoff reads one pipeline at a time")
	}
	conn, err := chconn.Open(ctx, chconn.Config{Addr: cfg.ClickHouse, User: cfg.User, Password: cfg.Password})
	if err != nil {
		return nil, err
	}
	st, err := store.New(conn, cfg.Database)
	if err != nil {
		conn.Close()
		return nil, usageError("--database: %v", err)
	}
	label := fmt.Sprintf("clickhouse %s/%s.events pipeline %s", cfg.ClickHouse, cfg.Database, f.Pipeline)
	return &clickhouseSource{label: label, st: st, filter: f, close: conn.Close}, nil
}

// clickhouseSource reads stored events; they were validated on ingest, so
// nothing is rejected here.
type clickhouseSource struct {
	label  string
	st     *store.Store
	filter store.Filter
	close  func() error
}

func (s *clickhouseSource) name() string { return s.label }

// grouped: the store reads one pipeline, in its sort key order.
func (s *clickhouseSource) grouped() bool { return true }

func (s *clickhouseSource) feed(ctx context.Context, add func(*model.Event) error, rep *reporter) error {
	defer s.close()
	n := 0
	err := s.st.EachEvent(ctx, s.filter, func(e model.Event) error {
		n++
		if !e.Type.HasBatch() {
			rep.sum.heartbeats++
		}
		rep.tick(n)
		return add(&e)
	})
	rep.sum.lines = n
	rep.sum.events = n
	if err != nil {
		return fmt.Errorf("%s: %w", s.label, err)
	}
	return nil
}

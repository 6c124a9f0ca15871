package main

import (
	"bufio"
	"context"
	"io"
	"time"

	"github.com/handoff-dev/handoff/judge/diagnose"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// This file adapts the event sources of judge/diagnose to the names
// remedy.go reads its events through (restore-signal and verify); it goes
// once remedy.go calls judge/diagnose itself.

// diagnoseConfig is where remedy.go's events are: a file, or ClickHouse at
// an address (the database and credentials beside it).
type diagnoseConfig struct {
	Events, ClickHouse, Database, User, Password string
	Pipeline, From, To                           string
}

// eventSource is a diagnose.Source.
type eventSource struct{ src diagnose.Source }

func (s eventSource) name() string { return s.src.Name() }

func (s eventSource) scope() sourceScope {
	sc := s.src.Scope()
	return sourceScope{from: sc.From, to: sc.To, sc: sc}
}

func (s eventSource) feed(ctx context.Context, add func(*model.Event) error, rep *reporter) error {
	rep.r = diagnose.NewReporter(rep.w, s.src, false)
	return s.src.Feed(ctx, add, rep.r)
}

// sourceScope is a diagnose.Scope.
type sourceScope struct {
	from, to model.Date
	sc       diagnose.Scope
}

func (sc sourceScope) firstOf(pipeline string) (model.Date, bool) { return sc.sc.FirstOf(pipeline) }

// reporter reports the lines a source rejects (diagnose.Reporter).
type reporter struct {
	w    *bufio.Writer
	name string
	sum  *summary
	r    *diagnose.Reporter
}

func (r *reporter) hiddenBad() {
	if r.r != nil {
		r.r.HiddenBad()
	}
}

type summary struct{ rejected map[model.RejectKind]int }

// openSource opens the source dc names (diagnose.OpenSource).
func openSource(ctx context.Context, dc diagnoseConfig, stdin io.Reader, only model.BatchKey, set *contract.Set, asOf time.Time) (eventSource, error) {
	cfg := diagnose.SourceConfig{Events: dc.Events, Pipeline: dc.Pipeline, From: dc.From, To: dc.To}
	if dc.ClickHouse != "" {
		cfg.ClickHouse = &chconfig.Service{Addr: dc.ClickHouse, Database: dc.Database, User: dc.User, Password: dc.Password}
	}
	src, err := diagnose.OpenSource(ctx, cfg, stdin, only, set, asOf)
	return eventSource{src: src}, err
}

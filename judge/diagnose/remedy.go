package diagnose

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
)

// BatchHistory is what restore-signal and verify read one batch's history
// through: the events file, or ClickHouse over the dates a fix could have
// touched (history.AroundBatch), with their context. It is the one place
// the remediation reads stored history from, through the same sources and
// the same read rule as `handoff diagnose`.
type BatchHistory struct {
	// Source names the events file or the ClickHouse service; its
	// Pipeline, From and To are set per batch.
	Source    SourceConfig
	Contracts *contract.Set
	// Messages receives the lines a source rejects.
	Messages io.Writer
}

// Batch diagnoses key as of asOf, with every batch the read saw (the
// neighbours a remediation must not touch). A batch with no event is an
// exitcode.NotDelivered error: nothing proves any boundary.
func (h BatchHistory) Batch(ctx context.Context, key model.BatchKey, asOf time.Time) (replay.Diagnosis, []replay.Diagnosis, error) {
	cfg := h.Source
	if cfg.ClickHouse != nil {
		from, to := history.AroundBatch(key)
		cfg.Pipeline, cfg.From, cfg.To = key.Pipeline, from.String(), to.String()
	}
	src, err := OpenSource(ctx, cfg, nil, model.BatchKey{}, h.Contracts, asOf)
	if err != nil {
		return replay.Diagnosis{}, nil, err
	}
	msgs := bufio.NewWriter(h.Messages)
	defer msgs.Flush()
	rep := NewReporter(msgs, src, false)
	sc := src.Scope()
	first, ok := sc.FirstOf(key.Pipeline)
	col := remedy.NewCollector(h.Contracts, key, asOf, remedy.Scope{From: sc.From, To: sc.To, First: first, HasFirst: ok})
	err = src.Feed(ctx, col.Add, rep)
	rep.HiddenBad()
	if err != nil {
		return replay.Diagnosis{}, nil, err
	}
	d, all, ok := col.Batch()
	if !ok {
		return d, nil, &exitcode.Error{Code: exitcode.NotDelivered, Err: fmt.Errorf("no events recorded for batch %s in %s: nothing proves any boundary, so nothing can be restored or verified", key, src.Name())}
	}
	return d, all, nil
}

package history

import (
	"context"
	"fmt"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
)

// EventReader reads the batch events of a filter; *Store implements it.
type EventReader interface {
	ContextReader
	EachEvent(ctx context.Context, f Filter, fn func(model.Event) error) error
}

// ReadUpstreams reads what the upstream rule (analyzer/upstream) needs for
// the diagnoses of req: the outcome, as of req.AsOf, of every batch of
// the pipelines req's pipelines wait for (transitively), from as far
// before req.From as an upstream's date reaches, each pipeline's first
// date in the whole table included. It is the same rule's input the
// detector holds in memory, so a read of the history and the live stream
// name one cause. It returns nil when no contract of req lists an
// upstream.
func ReadUpstreams(ctx context.Context, r EventReader, req ContextRequest) (*upstream.Table, error) {
	g := upstream.NewGraph(req.Contracts)
	if g.Empty() {
		return nil, nil
	}
	pipelines := req.Pipelines
	if pipelines == nil {
		pipelines = req.Contracts.Pipelines()
	}
	need := g.Needs(pipelines)
	tb := new(upstream.Table)
	if len(need) == 0 {
		return tb, nil
	}
	up := req
	up.Pipelines = need
	up.From = req.From.AddDays(-g.MaxBack())
	if up.From.Compare(FirstStorable) < 0 {
		up.From = FirstStorable
	}
	cx, err := ReadContext(ctx, r, up)
	if err != nil {
		return nil, fmt.Errorf("upstream batches: %w", err)
	}
	for _, p := range cx.Pipelines() {
		set := batches.New(req.Contracts, req.AsOf)
		cx.AddTo(set)
		set.Covers(up.From, up.To)
		if err := r.EachEvent(ctx, cx.Filter(p), func(e model.Event) error { set.Add(&e); return nil }); err != nil {
			return nil, fmt.Errorf("upstream batches of %s: %w", p, err)
		}
		if first, ok := cx.First(p); ok {
			tb.Known(p, first)
		}
		for _, d := range set.Diagnose(func(k model.BatchKey) bool { return k.Pipeline == p }) {
			if err := tb.Add(&d); err != nil {
				return nil, fmt.Errorf("upstream batch %s: %w", d.Batch, err)
			}
		}
	}
	return tb, nil
}

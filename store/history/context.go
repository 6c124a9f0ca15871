package history

import (
	"context"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/model"
)

// The history a batch needs. A diagnosis of the batches of business dates
// [From, To] as of a time equals the one over the whole stored history
// when the read holds, besides their own events:
//
//   - the previous batch of the schedule of the first batch in range, for
//     continuity (batches.ContextStart: the read starts at its date), and
//     the re-runs of that date and of every date read (a read of whole
//     business dates holds every batch id of each, so a re-run under
//     another batch id is there to stand in);
//   - where each pipeline's history starts (its first business date in the
//     whole table), before which no batch is expected and no previous
//     batch is looked for;
//   - the latest heartbeat of each process of those pipelines stamped at or
//     before the as-of time (later ones are not yet known at that time),
//     however old;
//   - and, for the batches the contract's calendar expects and that sent
//     no event, nothing more: they are the calendar's keys of [From, To]
//     (from each pipeline's first date on) that the read does not hold.
//
// ReadContext computes it; diagnose --clickhouse, backfill, serve's batch
// pages and lists, restore-signal and verify all read through it.

// Contracts gives the contract of a pipeline and lists the pipelines that
// have one (*contract.Set implements it; a nil *contract.Set has none).
type Contracts interface {
	batches.Contracts
	Pipelines() []string
}

// ContextRequest says which batches a read is for.
type ContextRequest struct {
	// Pipelines to read; nil: every pipeline with a batch event in
	// [From, To], and every pipeline with a contract whose stored history
	// starts by To (its expected batches of the range may all be absent).
	Pipelines []string
	// From and To bound the business dates of the batches, inclusive;
	// both required.
	From, To model.Date
	// AsOf is the time the batches are diagnosed as of.
	AsOf      time.Time
	Contracts Contracts
}

// ContextReader reads what ReadContext needs; *Store implements it.
type ContextReader interface {
	Census(ctx context.Context, f CensusFilter) ([]PipelineRows, error)
	LatestHeartbeats(ctx context.Context, pipelines []string, asOf time.Time) ([]model.Event, error)
}

// Context is what the diagnoses of the batches of [From, To] need besides
// their own events (see "The history a batch needs" above).
type Context struct {
	// ReadFrom is the first business date to read: From, or earlier for
	// the previous batch of the first batch in range of every pipeline,
	// never before the first storable date. Batches before From are
	// folded for continuity only.
	ReadFrom model.Date
	// From and To are the request's.
	From, To model.Date
	// AsOf is the request's, to the millisecond.
	AsOf time.Time
	// Census lists, in pipeline order, the pipelines read, each with its
	// first business date in the whole table (where continuity and the
	// calendar start: batches.Set.Known, OrderedOptions.First) and its
	// rows.
	Census []PipelineRows
	// Heartbeats are the latest heartbeat of each process of those
	// pipelines at or before AsOf (none when Census is empty).
	Heartbeats []model.Event
}

// FirstStorable is the first business date the events table can hold.
var FirstStorable = model.Date{Year: 1970, Month: 1, Day: 2}

// LastStorable is the last business date the events table can hold.
var LastStorable = model.Date{Year: 2105, Month: 12, Day: 31}

// ReadFrom is the first business date a read of req's batches starts at
// (Context.ReadFrom): it depends on the contracts only, so a reader may
// start reading the events while ReadContext reads the rest.
func ReadFrom(req ContextRequest) model.Date {
	from := req.From
	for _, p := range scheduled(req) {
		if d := batches.ContextStart(req.Contracts.For(p), p, req.From); d.Compare(from) < 0 {
			from = d
		}
	}
	if from.Compare(FirstStorable) < 0 {
		from = FirstStorable
	}
	return from
}

// scheduled is the pipelines whose schedules req looks back for.
func scheduled(req ContextRequest) []string {
	if req.Pipelines != nil {
		return req.Pipelines
	}
	return req.Contracts.Pipelines()
}

// ReadContext reads the Context of req. Pipelines without a contract have
// no schedule, so no continuity to look back for and no calendar. The
// census and the heartbeats are read at the same time (for the pipelines
// asked, or every pipeline; those of pipelines the census leaves out are
// dropped).
func ReadContext(ctx context.Context, r ContextReader, req ContextRequest) (*Context, error) {
	asOf := req.AsOf.UTC().Truncate(time.Millisecond)
	type hbResult struct {
		events []model.Event
		err    error
	}
	hbc := make(chan hbResult, 1)
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		hbs, err := r.LatestHeartbeats(hctx, req.Pipelines, asOf)
		hbc <- hbResult{hbs, err}
	}()
	census, err := r.Census(ctx, req.CensusFilter())
	hb := <-hbc
	if err != nil {
		return nil, err
	}
	if hb.err != nil {
		return nil, hb.err
	}
	return Assemble(req, census, hb.events), nil
}

// CensusFilter is the census ReadContext reads for req.
func (req ContextRequest) CensusFilter() CensusFilter {
	return CensusFilter{Pipelines: req.Pipelines, Scheduled: scheduled(req), ReadFrom: ReadFrom(req), From: req.From, To: req.To}
}

// Assemble is the Context of req from its census (Census of
// req.CensusFilter(), or FirstDateCache.CensusOf) and the latest
// heartbeats as of req.AsOf (LatestHeartbeats of req.Pipelines): what
// ReadContext does once it has read them, for a caller that reads them
// itself. The heartbeats of pipelines the census leaves out are dropped.
func Assemble(req ContextRequest, census []PipelineRows, heartbeats []model.Event) *Context {
	cx := &Context{ReadFrom: ReadFrom(req), From: req.From, To: req.To, AsOf: req.AsOf.UTC().Truncate(time.Millisecond), Census: census}
	if len(cx.Census) == 0 || len(heartbeats) == 0 {
		return cx
	}
	read := make(map[string]bool, len(cx.Census))
	for _, p := range cx.Census {
		read[p.Pipeline] = true
	}
	for _, e := range heartbeats {
		if read[e.Pipeline] {
			cx.Heartbeats = append(cx.Heartbeats, e)
		}
	}
	return cx
}

// BatchContext reads the Context of batch k alone as of asOf.
func BatchContext(ctx context.Context, r ContextReader, contracts Contracts, k model.BatchKey, asOf time.Time) (*Context, error) {
	return ReadContext(ctx, r, ContextRequest{Pipelines: []string{k.Pipeline}, From: k.BusinessDate, To: k.BusinessDate, AsOf: asOf, Contracts: contracts})
}

// AroundBatch is the range of business dates a fix of batch k could have
// touched, which verify reads (its "no other batch affected" check): a
// week either side of k's date. Its Context adds the previous batch of the
// first.
func AroundBatch(k model.BatchKey) (from, to model.Date) {
	return k.BusinessDate.AddDays(-7), k.BusinessDate.AddDays(7)
}

// Pipelines returns the names of the pipelines read, in order.
func (cx *Context) Pipelines() []string {
	out := make([]string, len(cx.Census))
	for i, p := range cx.Census {
		out[i] = p.Pipeline
	}
	return out
}

// First returns pipeline's first business date in the whole table.
func (cx *Context) First(pipeline string) (model.Date, bool) {
	for _, p := range cx.Census {
		if p.Pipeline == pipeline {
			return p.First, true
		}
	}
	return model.Date{}, false
}

// Filter selects the batch events of pipeline the Context needs: from
// ReadFrom to To (no heartbeats: Heartbeats holds those that count).
func (cx *Context) Filter(pipeline string) Filter {
	return Filter{Pipeline: pipeline, From: cx.ReadFrom, To: cx.To}
}

// AddTo gives set, which holds (or will hold) the events of Filter, what
// the Context knows besides: each pipeline's first date and the
// heartbeats. The caller calls set.Covers(From, To) (the calendar of the
// range).
func (cx *Context) AddTo(set *batches.Set) {
	for _, p := range cx.Census {
		set.Known(p.Pipeline, p.First)
	}
	for i := range cx.Heartbeats {
		set.Add(&cx.Heartbeats[i])
	}
}

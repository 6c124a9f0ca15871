package batches

import (
	"sort"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Neighbours is what the continuity rule needs to know of a pipeline's
// other batches. Set answers it from the batches it holds; the streaming
// detector answers it from its open batches and the compact verdicts of
// the ones it closed, so both apply one rule.
type Neighbours interface {
	// First returns the earliest business date of the pipeline that has a
	// batch with events: the start of what is known, before which no batch
	// is expected.
	First(pipeline string) (model.Date, bool)
	// Verdict returns the verdict of batch k (as of the evaluation), and
	// false when k has no events as of then (replay.State.Outcome).
	Verdict(k model.BatchKey) (model.Hypothesis, bool)
	// Reruns returns the declared re-runs of scheduled batch base
	// (contract.AttemptOf) that have events, sorted by batch id.
	Reruns(base model.BatchKey) []model.BatchKey
}

// PreviousOf builds the continuity context of batch k under contract c: the
// previous batch of the schedule, if the pipeline is known from before k's
// date. Continuity looks at the previous date (or slot), not at one id: its
// attempts (the scheduled batch and its declared re-runs) speak through the
// one Speaker picks, delivered if any attempt is delivered.
func PreviousOf(k model.BatchKey, c *contract.Contract, n Neighbours) replay.Previous {
	pk, ok := c.Previous(k)
	if !ok {
		return replay.Previous{}
	}
	if first, known := n.First(k.Pipeline); !known || pk.BusinessDate.Compare(first) < 0 {
		return replay.Previous{}
	}
	p := replay.Previous{Checked: true, Key: pk}
	var sp Attempt
	if c.Reruns.Off() {
		v, seen := n.Verdict(pk)
		if !seen {
			return p
		}
		sp = Attempt{Key: pk, Verdict: v}
	} else {
		_, attempts := AttemptsOf(pk, c, n)
		var seen bool
		if sp, seen = Speaker(attempts); !seen {
			return p
		}
	}
	p.Key = sp.Key
	p.Seen, p.Delivered, p.Verdict = true, sp.Verdict == model.Delivered, sp.Verdict
	return p
}

type procKey struct {
	system    model.System
	component string
}

// Processes keeps the latest heartbeat of each process, by pipeline. The
// zero Processes is empty and ready.
type Processes struct {
	byPipeline map[string]map[procKey]replay.Heartbeat
}

// Add keeps heartbeat e if it is the latest of its process (ties broken by
// event id, so arrival order does not matter). Other events are ignored.
func (p *Processes) Add(e *model.Event) {
	if e.Type.HasBatch() {
		return
	}
	if p.byPipeline == nil {
		p.byPipeline = make(map[string]map[procKey]replay.Heartbeat)
	}
	procs := p.byPipeline[e.Pipeline]
	if procs == nil {
		procs = make(map[procKey]replay.Heartbeat)
		p.byPipeline[e.Pipeline] = procs
	}
	ms := e.Time.UnixMilli()
	k := procKey{e.System, e.Component}
	h, ok := procs[k]
	if !ok || h.At.UnixMilli() < ms || (h.At.UnixMilli() == ms && h.EventID < e.ID) {
		procs[k] = replay.Heartbeat{System: e.System, Component: e.Component, At: e.Time.UTC(), EventID: e.ID}
	}
}

// Alive returns the latest heartbeat of each process of the pipeline, by
// system and component; keep, when not nil, selects which ones count.
func (p *Processes) Alive(pipeline string, keep func(replay.Heartbeat) bool) []replay.Heartbeat {
	procs := p.byPipeline[pipeline]
	if len(procs) == 0 {
		return nil
	}
	out := make([]replay.Heartbeat, 0, len(procs))
	for _, h := range procs {
		if keep == nil || keep(h) {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].System != out[j].System {
			return out[i].System < out[j].System
		}
		return out[i].Component < out[j].Component
	})
	return out
}

package remedy

import (
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Collector folds a pipeline's events into what Restore and Verify decide
// on: the batch's diagnosis and the diagnoses of every batch of its
// pipeline that was read (for continuity and "no other batch affected").
// Events of other pipelines are ignored; a source may feed them.
type Collector struct {
	key  model.BatchKey
	from model.Date
	bs   *batches.Set
}

// Scope is what a source knows beyond its events.
type Scope struct {
	// From: batches of earlier business dates were read for continuity
	// only (zero: every batch read counts).
	From model.Date
	// First is the pipeline's earliest business date in the whole
	// history, when the source knows it (HasFirst).
	First    model.Date
	HasFirst bool
}

// NewCollector returns a Collector for key's pipeline under set, as of
// asOf.
func NewCollector(set *contract.Set, key model.BatchKey, asOf time.Time, sc Scope) *Collector {
	bs := batches.New(batches.Contracts(set), asOf)
	if sc.HasFirst {
		bs.Known(key.Pipeline, sc.First)
	}
	return &Collector{key: key, from: sc.From, bs: bs}
}

// Add folds one event in.
func (c *Collector) Add(e *model.Event) error {
	if e.Pipeline == c.key.Pipeline {
		c.bs.Add(e)
	}
	return nil
}

// Batch returns the batch's diagnosis and every batch's of the pipeline,
// and false when no event of the batch was added.
func (c *Collector) Batch() (replay.Diagnosis, []replay.Diagnosis, bool) {
	all := c.bs.Diagnose(func(k model.BatchKey) bool { return k.BusinessDate.Compare(c.from) >= 0 })
	for _, d := range all {
		if d.Batch == c.key.String() {
			return d, all, true
		}
	}
	return replay.Diagnosis{}, nil, false
}

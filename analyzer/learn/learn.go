// Package learn suggests delivery contracts from what pipelines delivered
// (docs/learned.md): fed the stored boundary events of a range of business
// dates, it says for each pipeline the schedule, holidays, name templates,
// required boundaries, time zone and deadlines its history supports, with
// the evidence behind each, and says so where the history supports none.
//
// It is pure: events come in through Add, candidate time zones through
// Options, and nothing reads a clock or a file.
package learn

import (
	"sort"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// Learner collects what Suggest needs from a stream of events: per batch,
// when each boundary was first proven and which objects it named. Events
// may come in any order.
type Learner struct {
	pipes map[string]*pipe
	// last is the batch of the last event added (nil: none, or Forget
	// ran since): a batch's events mostly come in a row (a stored
	// history's read, a producer's run), and two map lookups keyed by
	// text per event were most of Add.
	last *batch
}

type pipe struct {
	name    string
	batches map[model.BatchKey]*batch
}

// batch is what one batch showed.
type batch struct {
	key model.BatchKey
	// proven[b] is the first time boundary b was proven, in Unix
	// milliseconds; 0 when never.
	proven [model.Consumed + 1]int64
	// artifact and signal are the object names the batch's data file and
	// completion signal went by (the first final name seen).
	artifact, signal string
}

// New returns an empty Learner.
func New() *Learner { return &Learner{pipes: map[string]*pipe{}} }

// Add takes one event into account. Heartbeats and events without a
// business date are ignored.
func (l *Learner) Add(e *model.Event) {
	if !e.Type.HasBatch() || e.BusinessDate.IsZero() || e.Pipeline == "" {
		return
	}
	k := e.Key()
	b := l.last
	if b == nil || b.key != k {
		p := l.pipes[e.Pipeline]
		if p == nil {
			p = &pipe{name: e.Pipeline, batches: map[model.BatchKey]*batch{}}
			l.pipes[e.Pipeline] = p
		}
		if b = p.batches[k]; b == nil {
			b = &batch{key: k}
			p.batches[k] = b
		}
		l.last = b
	}
	if bd := e.Type.Proves(); bd.Valid() {
		ms := e.Time.UnixMilli()
		if b.proven[bd] == 0 || ms < b.proven[bd] {
			b.proven[bd] = ms
		}
	}
	// The producer's final name wins over what a receiver saw; a
	// pipeline that only shows the receiver's side still names its files.
	switch e.Type {
	case model.ArtifactFinalized:
		b.artifact = e.Object
	case model.ArtifactTransferred:
		if b.artifact == "" {
			b.artifact = e.Object
		}
	case model.SignalPublished:
		b.signal = e.Object
	case model.SignalTransferred, model.SignalRestored:
		if b.signal == "" {
			b.signal = e.Object
		}
	}
}

// Pipelines returns the names of the pipelines seen, sorted.
func (l *Learner) Pipelines() []string {
	out := make([]string, 0, len(l.pipes))
	for n := range l.pipes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Options tune Suggest. The zero Options are the defaults.
type Options struct {
	// Zones are the candidate time zones, in order of preference: where
	// two make arrivals equally regular, the earlier wins. Empty: UTC only.
	Zones []*time.Location
	// MinBatches is the fewest batches a name template or the required
	// boundaries are learned from (DefaultMinBatches when 0).
	MinBatches int
	// MinDates is the fewest business dates a schedule, holidays, a time
	// zone or a deadline is learned from (DefaultMinDates when 0).
	MinDates int
}

// Defaults of Options.
const (
	DefaultMinBatches = 5
	DefaultMinDates   = 14
)

func (o Options) withDefaults() Options {
	if len(o.Zones) == 0 {
		o.Zones = []*time.Location{time.UTC}
	}
	if o.MinBatches <= 0 {
		o.MinBatches = DefaultMinBatches
	}
	if o.MinDates <= 0 {
		o.MinDates = DefaultMinDates
	}
	return o
}

// sortedBatches returns p's batches in key order.
func (p *pipe) sortedBatches() []*batch {
	out := make([]*batch, 0, len(p.batches))
	for _, b := range p.batches {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key.Compare(out[j].key) < 0 })
	return out
}

// firstProof returns the earliest boundary proof of b, and false when b
// proved none.
func (b *batch) firstProof() (int64, bool) {
	var first int64
	for _, bd := range model.Ladder {
		if t := b.proven[bd]; t != 0 && (first == 0 || t < first) {
			first = t
		}
	}
	return first, first != 0
}

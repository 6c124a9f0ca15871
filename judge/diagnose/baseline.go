package diagnose

import (
	"sync"
	"time"

	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// baselines learns the arrivals of the events diagnose reads, so that a
// diagnosis shows the baseline in force at its as-of beside its deadline,
// as `handoff detect` and `backfill` do (learn.BaselineAsOf, the default
// window and zones): the same events give the same baselines on all.
//
// One learner per pipeline: the fold renders a pipeline's diagnoses once
// its events are in (when the next pipeline begins, for a grouped source;
// at the end otherwise), while the feed goes on with other pipelines.
type baselines struct {
	o   learn.Options
	mu  sync.Mutex
	per map[string]*learn.Learner
	exp map[string]*learn.Expected
}

func newBaselines() (*baselines, error) {
	o, err := history.BaselineOptions()
	if err != nil {
		return nil, err
	}
	return &baselines{o: o, per: map[string]*learn.Learner{}, exp: map[string]*learn.Expected{}}, nil
}

// learn takes one event into its pipeline's learner.
func (b *baselines) learn(e *model.Event) {
	if e.Pipeline == "" || !e.Type.HasBatch() {
		return
	}
	b.mu.Lock()
	l := b.per[e.Pipeline]
	if l == nil {
		l = learn.New()
		b.per[e.Pipeline] = l
	}
	b.mu.Unlock()
	l.Add(e)
}

// add wraps a fold's add so that every event is learned from too.
func (b *baselines) add(add func(*model.Event) error) func(*model.Event) error {
	return func(e *model.Event) error {
		b.learn(e)
		return add(e)
	}
}

// annotate writes the baselines in force at the diagnoses' as-of into ds.
func (b *baselines) annotate(ds []replay.Diagnosis) {
	for i := range ds {
		k, err := model.ParseBatchKey(ds[i].Batch)
		if err != nil {
			continue
		}
		b.expected(k.Pipeline, ds[i].AsOf).Annotate(&ds[i], k)
	}
}

// expected learns a pipeline's expectations once, when first asked.
func (b *baselines) expected(pipeline string, asOf time.Time) *learn.Expected {
	b.mu.Lock()
	defer b.mu.Unlock()
	if x, ok := b.exp[pipeline]; ok {
		return x
	}
	var x *learn.Expected
	if l := b.per[pipeline]; l != nil {
		x = l.ExpectedAt(pipeline, asOf, b.o)
	}
	b.exp[pipeline] = x
	return x
}

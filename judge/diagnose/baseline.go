package diagnose

import (
	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/judge/suggest"
	"github.com/handoff-dev/handoff/model"
)

// baselines learns the arrivals of the events diagnose reads, so that a
// diagnosis shows the baseline in force at its as-of beside its deadline,
// as `handoff detect` does (learn.BaselineAsOf, the default window and
// zones): the same events give the same baselines on both.
type baselines struct {
	l *learn.Learner
	o learn.Options
}

func newBaselines() (*baselines, error) {
	o, err := suggest.BaselineOptions()
	if err != nil {
		return nil, err
	}
	return &baselines{l: learn.New(), o: o}, nil
}

// add wraps a fold's add so that every event is learned from too.
func (b *baselines) add(add func(*model.Event) error) func(*model.Event) error {
	return func(e *model.Event) error {
		b.l.Add(e)
		return add(e)
	}
}

// annotate writes the baselines in force at the diagnoses' as-of into ds.
func (b *baselines) annotate(ds []replay.Diagnosis) {
	if len(ds) == 0 {
		return
	}
	exp := b.l.Expect(learn.BaselineAsOf(ds[0].AsOf), 0, b.o)
	for i := range ds {
		if k, err := model.ParseBatchKey(ds[i].Batch); err == nil {
			exp.Of(k.Pipeline).Annotate(&ds[i], k)
		}
	}
}

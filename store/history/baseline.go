package history

import (
	"fmt"
	"time"

	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// BaselineOptions are the learner's options for baselines, the same
// wherever a diagnosis shows one (`handoff detect`, `diagnose`, `backfill`
// and `serve`), so that they learn the same ones from the same events:
// the default candidate zones (learn.DefaultZones).
func BaselineOptions() (learn.Options, error) {
	zones, err := contract.LoadZones(learn.DefaultZones())
	if err != nil {
		return learn.Options{}, fmt.Errorf("baselines: %w", err)
	}
	return learn.Options{Zones: zones}, nil
}

// BaselineWindow selects the events of pipeline that the baselines in
// force at asOf learn from: the learn.DefaultBaselineDays business dates
// that ended before asOf's UTC day (learn.BaselineAsOf). A diagnosis of
// the stored history reads them besides its own range, so that `handoff
// diagnose --clickhouse` and `handoff serve` show the baseline `handoff
// detect` and `backfill` compute for the same as-of, whatever the range.
func BaselineWindow(pipeline string, asOf time.Time) Filter {
	y, m, d := learn.BaselineAsOf(asOf).UTC().Date()
	to := model.Date{Year: y, Month: m, Day: d}
	return Filter{Pipeline: pipeline, From: to.AddDays(-(learn.DefaultBaselineDays - 1)), To: to}
}

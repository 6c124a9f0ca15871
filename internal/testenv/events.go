package testenv

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// Events returns n valid, varied events over batches of pipeline: every
// event type (heartbeats included), optional fields set and unset, attrs
// with and without values, millisecond times. Deterministic for a seed.
func Events(n int, pipeline string, seed int64) []model.Event {
	r := rand.New(rand.NewSource(seed))
	base := time.Date(2026, 10, 1, 1, 0, 0, 0, time.UTC)
	types := model.EventTypes
	out := make([]model.Event, 0, n)
	for i := 0; i < n; i++ {
		typ := types[r.Intn(len(types))]
		day := model.MustParseDate("2026-08-01").AddDays(i % 60)
		e := model.Event{
			Spec:     model.SpecV1,
			ID:       fmt.Sprintf("%s-%d-%08d", pipeline, seed, i),
			Type:     typ,
			Time:     base.Add(time.Duration(r.Int63n(int64(48 * time.Hour)))).Truncate(time.Millisecond),
			Pipeline: pipeline,
			System:   []model.System{model.Producer, model.Exchange, model.Consumer, model.Operator}[r.Intn(4)],
		}
		if typ.HasBatch() {
			e.BusinessDate = day
			e.BatchID = day.Compact()
			if r.Intn(10) == 0 {
				e.BatchID += "-rerun"
			}
		} else {
			e.Component = fmt.Sprintf("worker-%d", r.Intn(5))
		}
		if typ.NeedsObject() {
			e.Object = "account_balance_snapshot_" + e.BatchID + ".csv"
		}
		if typ.NeedsRows() || r.Intn(3) == 0 {
			e.Rows, e.HasRows = r.Int63n(1_000_000), true
			if r.Intn(20) == 0 {
				e.Rows = 0
			}
		}
		if r.Intn(2) == 0 {
			e.Bytes, e.HasBytes = r.Int63n(1<<40), true
		}
		if r.Intn(4) == 0 {
			e.Checksum = fmt.Sprintf("sha256:%016x", r.Uint64())
		}
		if r.Intn(3) == 0 {
			e.Attempt, e.HasAttempt = int64(r.Intn(3)), true
		}
		if typ.IsFailure() {
			e.Error = fmt.Sprintf("exit status %d: \"quoted\" \\ tab\there ünïcode", 1+r.Intn(3))
		}
		if r.Intn(2) == 0 {
			e.Component = fmt.Sprintf("host-%d", r.Intn(9))
		}
		switch r.Intn(4) {
		case 0:
			e.Attrs = map[string]string{"location": "/inbox/finance"}
		case 1:
			e.Attrs = map[string]string{"a": "1", "b": "", "z": `{"nested":[1,2]}`}
		}
		out = append(out, e)
	}
	return out
}

// RecentEvents returns n events of that many pipelines PREFIX.pNNNNN over the
// last five business dates (about 20 events a batch, every type, anomalies
// and failures among them), timed two to four days ago: every deadline of
// the default contract (24 hours after the latest boundary event) has
// passed, so the findings they raise do not depend on when they are
// evaluated, and all are within the detectors' retention window.
func RecentEvents(n int, prefix string, pipelines int, now time.Time) []model.Event {
	events := Events(n, prefix, 11)
	base := time.Date(2026, 10, 1, 1, 0, 0, 0, time.UTC)
	start := now.Add(-96 * time.Hour).Truncate(time.Millisecond)
	today := model.MustParseDate(now.UTC().Format(time.DateOnly))
	for i := range events {
		e := &events[i]
		e.Pipeline = fmt.Sprintf("%s.p%05d", prefix, i%pipelines)
		e.Time = start.Add(e.Time.Sub(base))
		if e.Type.HasBatch() {
			rerun := len(e.BatchID) > 8
			e.BusinessDate = today.AddDays(-1 - (i/pipelines)%5)
			e.BatchID = e.BusinessDate.Compact()
			if rerun {
				e.BatchID += "-rerun"
			}
			if e.Type.NeedsObject() {
				e.Object = "account_balance_snapshot_" + e.BatchID + ".csv"
			}
		}
	}
	return events
}

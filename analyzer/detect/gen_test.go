package detect_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

// otherPipeline has no contract file: the default ladder and 24h rule.
const otherPipeline = "orders.hourly-export"

var genStart = at("2026-09-01T00:00:00Z")

// genFrom starts the expected-batch calendar on the first generated date:
// the days genHistory skips are missing batches.
var genFrom = model.MustParseDate("2026-09-01")

// genHistory returns the events of days business dates of the seed
// pipeline (daily contract, deadlines in Asia/Shanghai) and of a pipeline
// with the default contract: batches cut at every point of the ladder,
// boundaries proven hours late, failures and retries, row mismatches,
// duplicate consumptions arriving after delivery, and heartbeats.
func genHistory(r *rand.Rand, days int) []model.Event {
	var out []model.Event
	for day := 0; day < days; day++ {
		date := model.DateFromDays(model.MustParseDate("2026-09-01").DaysSinceEpoch() + day)
		for _, p := range []string{seedPipeline, otherPipeline} {
			if r.IntN(10) == 0 {
				continue // never produced
			}
			out = append(out, genBatch(r, p, date)...)
		}
		for h := 0; h < 24; h += 6 {
			out = append(out, model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("hb-%d-%d", day, h), Type: model.ProcessHeartbeat,
				Time: date.In(time.UTC).Add(time.Duration(h)*time.Hour + time.Duration(r.IntN(3600))*time.Second), Pipeline: seedPipeline,
				System: model.Consumer, Component: fmt.Sprintf("consume-runner-%d", r.IntN(2))})
		}
	}
	return out
}

func genBatch(r *rand.Rand, p string, date model.Date) []model.Event {
	key := model.BatchKey{Pipeline: p, BusinessDate: date, BatchID: date.Compact()}
	// 17:00Z is 01:00 the next day in Shanghai: the producer's usual hour.
	t := date.In(time.UTC).Add(17*time.Hour + time.Duration(r.IntN(3600))*time.Second)
	csv := "account_balance_snapshot_" + key.BatchID + ".csv"
	flag := "account_balance_snapshot_" + key.BatchID + ".flag"
	rows := int64(1000 + r.IntN(100))
	var out []model.Event
	n := 0
	add := func(typ model.EventType, sys model.System, mut func(*model.Event)) {
		n++
		// Now and then a step is hours late: past its deadline, or not.
		if r.IntN(8) == 0 {
			t = t.Add(time.Duration(1+r.IntN(8)) * time.Hour)
		}
		t = t.Add(time.Duration(1+r.IntN(600)) * time.Second)
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s-%02d", p, key.BatchID, n), Type: typ, Time: t,
			Pipeline: p, BusinessDate: date, BatchID: key.BatchID, System: sys, Component: string(sys) + "-1"}
		if mut != nil {
			mut(&e)
		}
		out = append(out, e)
	}
	cut := r.IntN(10) // 7 and more: delivered
	attempt := func(e *model.Event) { e.Attempt, e.HasAttempt = 1, true }
	add(model.JobStarted, model.Producer, attempt)
	if r.IntN(6) == 0 {
		add(model.JobFailed, model.Producer, func(e *model.Event) { e.Error = "exit 1" })
		if cut == 0 {
			return out
		}
		add(model.JobStarted, model.Producer, func(e *model.Event) { e.Attempt, e.HasAttempt = 2, true })
	}
	if cut == 0 {
		return out
	}
	add(model.ArtifactStaged, model.Producer, func(e *model.Event) { e.Object = csv + ".tmp" })
	add(model.ArtifactFinalized, model.Producer, func(e *model.Event) {
		e.Object, e.Rows, e.HasRows, e.Checksum = csv, rows, true, "sha256:aa"
	})
	add(model.JobSucceeded, model.Producer, attempt)
	if cut == 1 {
		return out
	}
	add(model.SignalPublished, model.Producer, func(e *model.Event) { e.Object, e.Rows, e.HasRows = flag, rows, true })
	if cut == 2 {
		return out
	}
	add(model.ArtifactTransferred, model.Exchange, func(e *model.Event) { e.Object, e.Checksum = csv, "sha256:aa" })
	if cut == 3 {
		return out
	}
	add(model.SignalTransferred, model.Exchange, func(e *model.Event) { e.Object = flag })
	if cut == 4 {
		return out
	}
	add(model.BatchIdentified, model.Consumer, nil)
	add(model.ConsumeStarted, model.Consumer, attempt)
	if cut == 5 {
		add(model.ConsumeFailed, model.Consumer, func(e *model.Event) { e.Error = "timeout" })
		return out
	}
	consumed := rows
	if r.IntN(12) == 0 {
		consumed-- // row_mismatch
	}
	add(model.ConsumeSucceeded, model.Consumer, func(e *model.Event) { e.Rows, e.HasRows = consumed, true; attempt(e) })
	if r.IntN(12) == 0 {
		// A second consumption, a day later: after the batch was closed.
		t = t.Add(24 * time.Hour)
		add(model.ConsumeSucceeded, model.Consumer, func(e *model.Event) { e.Rows, e.HasRows = consumed, true })
	}
	return out
}

// player feeds a detector from a topic of events, stepping the safe time;
// it keeps what it has delivered, per batch, as the stored history the
// wiring would read back from ClickHouse.
type player struct {
	d          *detect.Detector
	r          *rand.Rand // nil: events in time order, exactly once
	pending    []model.Event
	history    map[model.BatchKey][]model.Event
	keys       []model.BatchKey // of history, in the order first seen
	heartbeats []model.Event
	route      func(model.BatchKey) bool // nil: every event
	findings   []detect.Finding
}

func newPlayer(d *detect.Detector, events []model.Event, r *rand.Rand) *player {
	p := &player{d: d, r: r, pending: slices.Clone(events), history: map[model.BatchKey][]model.Event{}}
	slices.SortStableFunc(p.pending, func(a, b model.Event) int { return a.Time.Compare(b.Time) })
	return p
}

func (p *player) observe(e model.Event) {
	k := e.Key()
	if p.route != nil && e.Type.HasBatch() && !p.route(k) {
		return
	}
	if !e.Type.HasBatch() {
		p.heartbeats = append(p.heartbeats, e)
	} else {
		if _, ok := p.history[k]; !ok {
			p.keys = append(p.keys, k)
		}
		p.history[k] = append(p.history[k], e)
	}
	if !p.d.Observe(&e) {
		// The batch was closed: fold its stored history back in.
		for _, h := range p.history[k] {
			p.d.Observe(&h)
		}
		p.d.Resume(k)
	}
}

// step delivers the events visible at safe (with r: in a shuffled order,
// with redeliveries of earlier events and some events of the next hour
// early) and advances.
func (p *player) step(safe time.Time) []detect.Finding {
	i := 0
	for i < len(p.pending) && !p.pending[i].Time.After(safe) {
		i++
	}
	batch := slices.Clone(p.pending[:i])
	p.pending = p.pending[i:]
	if p.r != nil {
		for len(p.pending) > 0 && p.pending[0].Time.Before(safe.Add(time.Hour)) && p.r.IntN(3) == 0 {
			batch = append(batch, p.pending[0])
			p.pending = p.pending[1:]
		}
		for _, k := range p.keys {
			if evs := p.history[k]; p.r.IntN(20) == 0 {
				batch = append(batch, evs[p.r.IntN(len(evs))])
			}
		}
		p.r.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	}
	for _, e := range batch {
		p.observe(e)
	}
	fs := wired(p.d.Advance(safe.Add(time.Second), safe))
	p.findings = append(p.findings, fs...)
	return fs
}

// steps returns the safe times of a run over days business dates.
func steps(days int) []time.Time {
	var out []time.Time
	for t := genStart; t.Before(genStart.Add(time.Duration(days+3) * 24 * time.Hour)); t = t.Add(20 * time.Minute) {
		out = append(out, t)
	}
	return out
}

// restart is what the wiring does on start: a new detector reads back the
// stored history (every event p delivered) and the latest published
// record of each fingerprint, and goes on with the same topic.
func (p *player) restart(t testing.TB, cfg detect.Config) *player {
	t.Helper()
	d := mustNew(t, cfg)
	for _, k := range p.keys {
		for _, e := range p.history[k] {
			d.Observe(&e)
		}
	}
	for _, e := range p.heartbeats {
		d.Observe(&e)
	}
	if err := d.Restore(latest(p.findings)...); err != nil {
		t.Fatal(err)
	}
	return &player{d: d, r: p.r, pending: p.pending, history: p.history, keys: p.keys, heartbeats: p.heartbeats, route: p.route}
}

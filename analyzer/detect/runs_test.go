package detect_test

import (
	"bytes"
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

// storedOrder is a history as a takeover reads it back from ClickHouse:
// in parts (of the table, each in its key's order: a batch's events in a
// row, in no particular order of time within it), the parts one after the
// other, with copies of events in other parts (the merges have not
// collapsed them yet). Some copies carry strings of their own, as events
// decoded from the topic do, so that a batch's run is recognised by value.
func storedOrder(r *rand.Rand, events []model.Event) []model.Event {
	parts := make([][]model.Event, 3)
	for _, e := range events {
		i := r.IntN(len(parts))
		parts[i] = append(parts[i], e)
		if r.IntN(10) == 0 {
			c := e
			c.Pipeline, c.BatchID, c.ID = strings.Clone(e.Pipeline), strings.Clone(e.BatchID), strings.Clone(e.ID)
			i = r.IntN(len(parts))
			parts[i] = append(parts[i], c)
		}
	}
	var out []model.Event
	for _, p := range parts {
		r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		slices.SortStableFunc(p, func(a, b model.Event) int {
			// Heartbeats (no batch) sort with the zero key, first.
			return a.Key().Compare(b.Key())
		})
		out = append(out, p...)
	}
	return out
}

// reruns are declared re-runs ({batch_id}-r{n}) of some generated dates of
// the seed pipeline: a failed attempt and a delivered one, so that the
// attempts of a date touch each other.
func reruns(days int) []model.Event {
	var out []model.Event
	for day := 2; day < days; day += 3 {
		date := model.DateFromDays(genFrom.DaysSinceEpoch() + day)
		start := date.In(time.UTC).Add(20 * time.Hour)
		out = append(out, absDelivered(date.String(), date.Compact()+"-r2", start)...)
		out = append(out, absEvent(date.Compact()+"-r3-01", date.String(), date.Compact()+"-r3", model.JobStarted, start.Add(time.Hour)),
			absEvent(date.Compact()+"-r3-02", date.String(), date.Compact()+"-r3", model.JobFailed, start.Add(70*time.Minute)))
	}
	return out
}

// runsPair is two detectors fed the same calls: runs as it is, byEvent
// made to forget, before each call, the batch of the event before
// (detect.Detector.ForgetRun), so that it folds every event as the first
// of its batch's run.
type runsPair struct {
	t             *testing.T
	runs, byEvent *detect.Detector
	// history is every event observed of each batch, for a reopened one.
	history map[model.BatchKey][]model.Event
	// published is every finding the detectors published.
	published []detect.Finding
}

func (p *runsPair) observe(e model.Event) {
	if e.Type.HasBatch() {
		p.history[e.Key()] = append(p.history[e.Key()], e)
	}
	for _, d := range []*detect.Detector{p.runs, p.byEvent} {
		if d == p.byEvent {
			d.ForgetRun()
		}
		if !d.Observe(&e) {
			for _, h := range p.history[e.Key()] {
				if d == p.byEvent {
					d.ForgetRun()
				}
				d.Observe(&h)
			}
			d.Resume(e.Key())
		}
	}
}

func (p *runsPair) restore(fs []detect.Finding) {
	p.byEvent.ForgetRun()
	for _, d := range []*detect.Detector{p.runs, p.byEvent} {
		if err := d.Restore(fs...); err != nil {
			p.t.Fatal(err)
		}
	}
}

// same fails the test when the two detectors hold anything different.
func (p *runsPair) same(when string) {
	p.t.Helper()
	if a, b := p.runs.Dump(), p.byEvent.Dump(); a != b {
		p.t.Fatalf("%s: the detector folding runs holds something else than the one folding event by event:\n%s", when, firstDiff([]byte(a), []byte(b)))
	}
}

func (p *runsPair) advance(now, safe time.Time) {
	p.t.Helper()
	fs := p.runs.Advance(now, safe)
	p.published = append(p.published, fs...)
	a, b := findingsJSON(fs), findingsJSON(p.byEvent.Advance(now, safe))
	if !bytes.Equal(a, b) {
		p.t.Fatalf("advance to %s: the detectors published different findings:\n%s", safe, firstDiff(a, b))
	}
}

// TestRunsFoldAsEventByEvent: a detector that finds an event's batch as
// the batch of the event before and skips a touch that still stands (the
// runs of a stored history) holds, after every call, exactly what one
// that looks every event's batch up and touches its neighbours every time
// holds, and publishes the same findings: on a takeover's stored history
// (a batch's events in a row, parts one after the other, copies, any
// order of time, declared re-runs, events of batches not owned), its
// restored findings, the live events after it (shuffled, redelivered,
// batches closed and reopened), a rebalance that releases half the
// batches and a second takeover of them. With baselines, which learn
// from every event observed.
func TestRunsFoldAsEventByEvent(t *testing.T) {
	contracts := seedContracts(t)
	const days = 12
	r := rand.New(rand.NewPCG(20, 5))
	events := append(genHistory(r, days), reruns(days)...)
	slices.SortStableFunc(events, func(a, b model.Event) int { return a.Time.Compare(b.Time) })
	ts := steps(days)
	cut := len(ts) / 2

	// What was published before the takeover: one detector of every batch.
	ref := newPlayer(mustNew(t, detect.Config{Contracts: contracts, From: genFrom}), events, nil)
	for _, safe := range ts[:cut] {
		ref.step(safe)
	}
	published := latest(ref.findings)
	stored := slices.DeleteFunc(slices.Clone(events), func(e model.Event) bool { return e.Time.After(ts[cut]) })
	live := events[len(stored):]
	if len(published) == 0 || len(live) == 0 {
		t.Fatalf("%d findings published, %d events after the takeover: the test needs both", len(published), len(live))
	}

	cfg := detect.Config{Contracts: contracts, From: genFrom, Owns: ownsParity(0), Baselines: &detect.Baselines{}}
	p := &runsPair{t: t, runs: mustNew(t, cfg), byEvent: mustNew(t, cfg), history: map[model.BatchKey][]model.Event{}}
	for _, d := range []*detect.Detector{p.runs, p.byEvent} {
		d.Floor(ts[cut])
	}
	for _, e := range storedOrder(r, stored) {
		p.observe(e)
	}
	p.same("after the stored history")
	p.restore(published)
	p.same("after the restore")
	if st := p.runs.Stats(); st.Open == 0 {
		t.Fatalf("nothing open after the takeover (%+v): the test needs batches", st)
	}

	half := cut + (len(ts)-cut)/2
	pending := live
	var last []model.Event // the last event of the step before
	step := func(safe time.Time) {
		i := 0
		for i < len(pending) && !pending[i].Time.After(safe) {
			i++
		}
		// The first events after an advance are the last one before it
		// again (a redelivery) and, now and then, a new event of its batch
		// (a late repeat under an id of its own): the batch may have
		// closed meanwhile, and is then reopened.
		if len(last) > 0 && r.IntN(4) == 0 {
			again := last[0]
			again.ID += "-again"
			last = append(last, again)
		}
		batch := append(slices.Clone(last), pending[:i]...)
		pending = pending[i:]
		for _, k := range slices.SortedFunc(maps.Keys(p.history), model.BatchKey.Compare) {
			if evs := p.history[k]; r.IntN(40) == 0 {
				batch = append(batch, evs[r.IntN(len(evs))])
			}
		}
		slices.SortFunc(batch[len(last):], func(a, b model.Event) int {
			return cmp.Or(a.Time.Compare(b.Time), strings.Compare(a.ID, b.ID))
		})
		r.Shuffle(len(batch)-len(last), func(i, j int) {
			if r.IntN(2) == 0 {
				batch[len(last)+i], batch[len(last)+j] = batch[len(last)+j], batch[len(last)+i]
			}
		})
		for _, e := range batch {
			p.observe(e)
		}
		p.same("events up to " + safe.String())
		last = nil
		if len(batch) > 0 {
			last = batch[len(batch)-1:]
		}
		p.advance(safe.Add(time.Second), safe)
	}
	for i, safe := range ts[cut:half] {
		step(safe)
		if i%12 == 0 {
			p.same("advance to " + safe.String())
		}
	}
	p.same("before the rebalance")

	// A rebalance: the other half of the batches comes over, this half
	// goes and comes back, as a member's partitions do after a fault.
	for _, d := range []*detect.Detector{p.runs, p.byEvent} {
		d.Release(ownsParity(0))
		d.SetOwns(nil)
	}
	p.same("after the release")
	for _, e := range storedOrder(r, events[:len(events)-len(pending)]) {
		p.observe(e)
	}
	p.restore(latest(append(slices.Clone(ref.findings), p.published...)))
	p.same("after the second takeover")
	for i, safe := range ts[half:] {
		step(safe)
		if i%12 == 0 {
			p.same("advance to " + safe.String())
		}
	}
	p.same("at the end")
}

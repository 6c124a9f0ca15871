package detect_test

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

// batchEvents returns the seed events of one business date.
func batchEvents(t *testing.T, date string) []model.Event {
	var out []model.Event
	for _, e := range seedEvents(t) {
		if e.Type.HasBatch() && e.BusinessDate.String() == date {
			out = append(out, e)
		}
	}
	return out
}

// seedEvent makes one more event of the seed's 2026-09-30 batch.
func seedEvent(id string, typ model.EventType, tm string, mut func(*model.Event)) model.Event {
	e := model.Event{Spec: model.SpecV1, ID: id, Type: typ, Time: at(tm), Pipeline: seedPipeline,
		BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930", System: model.Exchange, Component: "sftp-relay-2"}
	if mut != nil {
		mut(&e)
	}
	return e
}

// TestRaisedAtItsDeadlineNotBefore: signal_delivered of the stalled seed
// batch is due 2026-09-30T22:00:00.000Z; a safe time up to and including
// the deadline raises nothing, the first millisecond after it raises the
// finding, and later advances do not raise it again.
func TestRaisedAtItsDeadlineNotBefore(t *testing.T) {
	d := mustNew(t, detect.Config{Contracts: seedContracts(t)})
	for _, e := range batchEvents(t, "2026-09-30") {
		d.Observe(&e)
	}
	steps := []struct {
		safe string
		want int
	}{
		{"2026-09-30T18:00:00Z", 0},
		{"2026-09-30T21:59:59.999Z", 0},
		{"2026-09-30T22:00:00Z", 0},
		{"2026-09-30T22:00:00.001Z", 1},
		{"2026-09-30T22:00:00.002Z", 0},
		{"2026-10-01T05:00:00Z", 0},
	}
	for _, st := range steps {
		fs := d.Advance(at(st.safe), at(st.safe))
		if len(fs) != st.want {
			t.Fatalf("safe %s: %d findings %+v, want %d", st.safe, len(fs), summarize(fs), st.want)
		}
		if len(fs) == 1 && (fs[0].Name != "signal_delivered" || fs[0].Lateness != time.Millisecond) {
			t.Errorf("safe %s: %+v, want signal_delivered overdue by 1ms", st.safe, summarize(fs))
		}
	}
}

// TestResolvedLateKeepsLateness: the stalled seed batch gets its signal
// restored 90 minutes after the deadline, then is identified and consumed
// late: each overdue finding is resolved with its lateness (one born
// resolved for consumed, which no evaluation saw overdue as the first
// missing boundary), then the batch is closed.
func TestResolvedLateKeepsLateness(t *testing.T) {
	d := mustNew(t, detect.Config{Contracts: seedContracts(t)})
	s := newStream(d, append(batchEvents(t, "2026-09-30"),
		seedEvent("restore-1", model.SignalRestored, "2026-09-30T23:30:00Z", func(e *model.Event) {
			e.System, e.Component, e.Object = model.Operator, "handoff-restore", "account_balance_snapshot_20260930.flag"
		}),
		seedEvent("ident-1", model.BatchIdentified, "2026-09-30T23:40:00Z", func(e *model.Event) { e.System, e.Component = model.Consumer, "consume-runner-1" }),
		seedEvent("consume-1", model.ConsumeSucceeded, "2026-09-30T23:45:00Z", func(e *model.Event) {
			e.System, e.Component, e.Rows, e.HasRows = model.Consumer, "consume-runner-1", 120345, true
		}),
	))
	opened := s.step(at("2026-09-30T22:05:00Z"), time.Second)
	if len(opened) != 1 || opened[0].State != detect.Open {
		t.Fatalf("at 22:05: %+v, want signal_delivered open", summarize(opened))
	}
	fs := s.step(at("2026-09-30T23:31:00Z"), time.Second)
	want := []summary{
		// identified is due 30m after signal_delivered, capped by consumed's
		// 23:00Z: overdue as soon as it is the first missing boundary.
		{seedPipeline + "/2026-09-30/20260930", "overdue", "identified", detect.Open, 1, 31 * time.Minute},
		{seedPipeline + "/2026-09-30/20260930", "overdue", "signal_delivered", detect.Resolved, 2, 90 * time.Minute},
	}
	checkSummaries(t, "at 23:31", fs, want)
	for _, f := range fs {
		if f.Name == "signal_delivered" {
			if !f.RaisedAt.Equal(opened[0].RaisedAt) || !f.ResolvedAt.Equal(at("2026-09-30T23:31:01Z")) || !f.Deadline.Equal(at("2026-09-30T22:00:00Z")) {
				t.Errorf("resolved record raised %s resolved %s deadline %s: want the open record's raised_at, now, 22:00", f.RaisedAt, f.ResolvedAt, f.Deadline)
			}
			if f.Fingerprint != opened[0].Fingerprint {
				t.Errorf("resolved fingerprint %s, open one %s: one condition, one fingerprint", f.Fingerprint, opened[0].Fingerprint)
			}
		}
	}
	fs = s.step(at("2026-09-30T23:50:00Z"), time.Second)
	checkSummaries(t, "at 23:50", fs, []summary{
		{seedPipeline + "/2026-09-30/20260930", "overdue", "consumed", detect.Resolved, 1, 45 * time.Minute},
		{seedPipeline + "/2026-09-30/20260930", "overdue", "identified", detect.Resolved, 2, 40 * time.Minute},
	})
	if st := d.Stats(); st.Open != 0 || st.Closed != 1 || st.Armed != 0 {
		t.Errorf("after delivery: %+v, want the batch closed and no timer", st)
	}
	// A redelivered event of a closed batch is recognised; a new one
	// suspends the batch until its history is folded back in.
	dup := seedEvent("consume-1", model.ConsumeSucceeded, "2026-09-30T23:45:00Z", nil)
	if !d.Observe(&dup) {
		t.Error("a redelivered event of a closed batch asked for its history")
	}
	again := seedEvent("consume-2", model.ConsumeSucceeded, "2026-09-30T23:55:00Z", func(e *model.Event) {
		e.System, e.Rows, e.HasRows = model.Consumer, 120345, true
	})
	if d.Observe(&again) {
		t.Fatal("a new event of a closed batch did not ask for the batch's history")
	}
	if fs := d.Advance(at("2026-10-01T00:00:00Z"), at("2026-10-01T00:00:00Z")); len(fs) != 0 {
		t.Errorf("a suspended batch was evaluated: %+v", summarize(fs))
	}
	for _, e := range s.observed(t, "2026-09-30") {
		d.Observe(&e)
	}
	if !d.Resume(again.Key()) {
		t.Fatal("Resume: the batch was not suspended")
	}
	fs = d.Advance(at("2026-10-01T00:00:00Z"), at("2026-10-01T00:00:00Z"))
	checkSummaries(t, "after resume", fs, []summary{
		{seedPipeline + "/2026-09-30/20260930", "duplicate_consumption", "", detect.Open, 1, 0},
	})
}

// observed returns the events of date the stream has delivered so far.
func (s *stream) observed(t *testing.T, date string) []model.Event {
	var out []model.Event
	for _, e := range batchEvents(t, date) {
		if !e.Time.After(s.d.Stats().Safe) {
			out = append(out, e)
		}
	}
	return append(out,
		seedEvent("restore-1", model.SignalRestored, "2026-09-30T23:30:00Z", func(e *model.Event) {
			e.System, e.Component, e.Object = model.Operator, "handoff-restore", "account_balance_snapshot_20260930.flag"
		}),
		seedEvent("ident-1", model.BatchIdentified, "2026-09-30T23:40:00Z", func(e *model.Event) { e.System, e.Component = model.Consumer, "consume-runner-1" }),
		seedEvent("consume-1", model.ConsumeSucceeded, "2026-09-30T23:45:00Z", func(e *model.Event) {
			e.System, e.Component, e.Rows, e.HasRows = model.Consumer, "consume-runner-1", 120345, true
		}))
}

func checkSummaries(t *testing.T, when string, fs []detect.Finding, want []summary) {
	t.Helper()
	got := summarize(fs)
	if len(got) != len(want) {
		t.Fatalf("%s: %d findings %+v, want %+v", when, len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: finding %d = %+v, want %+v", when, i, got[i], want[i])
		}
	}
}

// TestBacklogRaisesNothingFalse: at 19:00 the topic holds the 2026-09-30
// batch's events up to the transfer, but the detector has folded only
// job.started (17:00) and its safe time is 17:05. Deadlines between safe
// and now (produced at 18:00, finalized, signaled) must not fire; once the
// backlog is folded and safe catches up, nothing is overdue. A detector
// that took now as its safe time would raise produced overdue: the test
// shows that it would.
func TestBacklogRaisesNothingFalse(t *testing.T) {
	events := batchEvents(t, "2026-09-30")
	now := at("2026-09-30T19:00:00Z")
	for _, naive := range []bool{false, true} {
		d := mustNew(t, detect.Config{Contracts: seedContracts(t)})
		d.Observe(&events[0]) // job.started, 17:00
		if events[0].Type != model.JobStarted {
			t.Fatalf("seed order changed: first event %s", events[0].Type)
		}
		var fs []detect.Finding
		for i := 0; i < 5; i++ {
			safe := at("2026-09-30T17:05:00Z")
			if naive {
				safe = now
			}
			fs = append(fs, d.Advance(now.Add(time.Duration(i)*time.Minute), safe)...)
		}
		if naive {
			if len(fs) == 0 || fs[0].Name != "produced" {
				t.Fatalf("the naive detector raised %+v: the scenario does not exercise the backlog", summarize(fs))
			}
			continue
		}
		if len(fs) != 0 {
			t.Fatalf("backlog: raised %+v while the evidence was behind the deadlines", summarize(fs))
		}
		for i := range events {
			d.Observe(&events[i])
		}
		if fs := d.Advance(now.Add(10*time.Minute), now.Add(10*time.Minute)); len(fs) != 0 {
			t.Fatalf("after the backlog: raised %+v", summarize(fs))
		}
	}
}

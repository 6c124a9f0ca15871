package notify

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
)

// TestOpenSetLifecycle plays one condition through its records: open,
// the same record again, a status change, a stale record, the resolution.
// Alertmanager must end with no alert firing for it: the status change
// resolves the alert of the old labels, and the resolution ends the alert
// of the labels it fired under (not those of the resolved record, whose
// status is delivered).
func TestOpenSetLifecycle(t *testing.T) {
	open := seedFinding(t)
	failed := open
	failed.Seq, failed.Status = 2, replay.StatusFailed
	resolved := open
	resolved.Seq, resolved.State, resolved.Status, resolved.ResolvedAt = 3, detect.Resolved, replay.StatusDelivered, sendAt.Add(time.Hour)

	s := newOpenSet()
	type step struct {
		name   string
		f      detect.Finding
		news   bool
		alerts int
		open   int
	}
	for _, st := range []step{
		{"open", open, true, 1, 1},
		{"open again (redelivered)", open, false, 0, 1},
		{"status change", failed, true, 2, 1},
		{"stale record", open, false, 0, 1},
		{"resolved", resolved, true, 1, 0},
		{"resolved again", resolved, false, 0, 0},
	} {
		alerts, out := s.apply(&st.f, "", sendAt, 5*time.Minute)
		if news := out != stale; news != st.news || len(alerts) != st.alerts || s.len() != st.open {
			t.Fatalf("%s: news %v, %d alerts, %d open; want %v, %d, %d", st.name, news, len(alerts), s.len(), st.news, st.alerts, st.open)
		}
		switch st.name {
		case "status change":
			old, cur := alerts[0], alerts[1]
			if old.Labels["status"] != "late" || !old.EndsAt.Equal(sendAt) {
				t.Errorf("status change: first alert %v ends %s; want the late alert resolved at the send time", old.Labels, old.EndsAt)
			}
			if cur.Labels["status"] != "failed" || !cur.EndsAt.Equal(sendAt.Add(5*time.Minute)) || !cur.StartsAt.Equal(open.RaisedAt) {
				t.Errorf("status change: second alert %v %s..%s; want failed, firing from raised_at for a lease", cur.Labels, cur.StartsAt, cur.EndsAt)
			}
		case "resolved":
			if a := alerts[0]; a.Labels["status"] != "failed" || !a.EndsAt.Equal(resolved.ResolvedAt) {
				t.Errorf("resolved: alert %v ends %s; want the failed alert ended at resolved_at", a.Labels, a.EndsAt)
			}
		}
	}
	if got := s.firing("", sendAt, time.Minute); len(got) != 0 {
		t.Errorf("firing after resolution: %v", got)
	}
}

// TestFiringRenewsLease: open findings are re-sent with the same labels
// and startsAt and a lease counted from the re-send time.
func TestFiringRenewsLease(t *testing.T) {
	f := seedFinding(t)
	s := newOpenSet()
	first, _ := s.apply(&f, "", sendAt, 5*time.Minute)
	later := sendAt.Add(4 * time.Minute)
	again := s.firing("", later, 5*time.Minute)
	if len(again) != 1 {
		t.Fatalf("%d alerts firing, want 1", len(again))
	}
	if !again[0].StartsAt.Equal(first[0].StartsAt) || !again[0].EndsAt.Equal(later.Add(5*time.Minute)) {
		t.Errorf("re-sent %s..%s; want startsAt %s and endsAt %s", again[0].StartsAt, again[0].EndsAt, first[0].StartsAt, later.Add(5*time.Minute))
	}
	for k, v := range first[0].Labels {
		if again[0].Labels[k] != v {
			t.Errorf("label %s changed on re-send: %q -> %q", k, v, again[0].Labels[k])
		}
	}
}

// TestOpenSetHold plays findings through a hold of 10 minutes, the clock
// passed in: within the hold a finding sends nothing and is not firing;
// resolved within it, it never sends anything; still open when the hold
// runs out, it fires (nextDue says when); once it fired, its resolution
// is sent, and a status change while held stays quiet.
func TestOpenSetHold(t *testing.T) {
	open := seedFinding(t) // raised 2026-09-30T22:15:30Z
	raised := open.RaisedAt
	const hold = 10 * time.Minute
	resolvedAt := func(seq int, at time.Time) detect.Finding {
		r := open
		r.Seq, r.State, r.Status, r.ResolvedAt = seq, detect.Resolved, replay.StatusDelivered, at
		return r
	}
	failed := open
	failed.Seq, failed.Status = 2, replay.StatusFailed
	type step struct {
		name   string
		f      *detect.Finding // nil: only the clock moves (firing at now)
		now    time.Duration   // after raised_at
		out    outcome
		alerts int // sent by apply, or firing at now
	}
	r2 := resolvedAt(2, raised.Add(5*time.Minute))
	r3 := resolvedAt(3, raised.Add(20*time.Minute))
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"resolved within the hold never pages", []step{
			{"open", &open, time.Minute, held, 0},
			{"clock within the hold", nil, 9 * time.Minute, 0, 0},
			{"resolved", &r2, 5 * time.Minute, deliver, 0},
			{"clock past the hold", nil, 11 * time.Minute, 0, 0},
		}},
		{"still open after the hold pages, then resolves", []step{
			{"open", &open, 0, held, 0},
			{"status change while held", &failed, 5 * time.Minute, held, 0},
			{"clock just before the hold", nil, hold - time.Millisecond, 0, 0},
			{"clock at the hold", nil, hold, 0, 1},
			{"resolved", &r3, 20 * time.Minute, deliver, 1},
		}},
		{"consumed after its hold ran out pages at once", []step{
			{"open", &open, 15 * time.Minute, deliver, 1},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newOpenSet()
			s.hold = func(*detect.Finding) time.Duration { return hold }
			for _, st := range tt.steps {
				now := raised.Add(st.now)
				var got []Alert
				if st.f == nil {
					got = s.firing("", now, time.Minute)
				} else {
					var out outcome
					got, out = s.apply(st.f, "", now, time.Minute)
					if out != st.out {
						t.Fatalf("%s: outcome %d, want %d", st.name, out, st.out)
					}
				}
				if len(got) != st.alerts {
					t.Fatalf("%s: %d alerts %v, want %d", st.name, len(got), got, st.alerts)
				}
				if st.name == "clock at the hold" && got[0].Labels["status"] != "failed" {
					t.Errorf("fired under %v, want the latest record's labels (failed)", got[0].Labels)
				}
				if st.name == "resolved" && st.alerts == 1 && got[0].Labels["status"] != "failed" {
					t.Errorf("resolution under %v, want the labels that fired (failed)", got[0].Labels)
				}
			}
		})
	}
	s := newOpenSet()
	s.hold = func(*detect.Finding) time.Duration { return hold }
	if _, ok := s.nextDue(raised); ok {
		t.Errorf("nextDue of an empty set: want none")
	}
	s.apply(&open, "", raised, time.Minute)
	if due, ok := s.nextDue(raised.Add(time.Minute)); !ok || !due.Equal(raised.Add(hold)) {
		t.Errorf("nextDue %s %v, want %s", due, ok, raised.Add(hold))
	}
	if open, pending := s.counts(raised.Add(time.Minute)); open != 1 || pending != 1 {
		t.Errorf("counts within the hold: %d open, %d held; want 1, 1", open, pending)
	}
	if _, ok := s.nextDue(raised.Add(hold)); ok {
		t.Errorf("nextDue at the due time: want none held")
	}
}

// TestOpenSetSkip: records of a finding raised before the skip time are
// seen (a redelivery is stale) but never sent, their resolution neither;
// a finding raised at the skip time or later is delivered.
func TestOpenSetSkip(t *testing.T) {
	old := seedFinding(t)
	s := newOpenSet()
	s.skipBefore = old.RaisedAt.Add(time.Millisecond)
	if a, out := s.apply(&old, "", sendAt, time.Minute); out != skipped || len(a) != 0 || s.len() != 0 {
		t.Fatalf("old open record: outcome %d, %d alerts, %d open; want skipped, none, none", out, len(a), s.len())
	}
	if _, out := s.apply(&old, "", sendAt, time.Minute); out != stale {
		t.Errorf("the old record again: outcome %d, want stale", out)
	}
	res := old
	res.Seq, res.State, res.ResolvedAt = 2, detect.Resolved, sendAt
	if a, out := s.apply(&res, "", sendAt, time.Minute); out != skipped || len(a) != 0 {
		t.Errorf("resolution of a skipped finding: outcome %d, %d alerts; want skipped, none", out, len(a))
	}
	s.skipBefore = old.RaisedAt
	other := old
	other.Seq = 3
	if a, out := s.apply(&other, "", sendAt, time.Minute); out != deliver || len(a) != 1 {
		t.Errorf("raised at the skip time: outcome %d, %d alerts; want delivered, 1", out, len(a))
	}
}

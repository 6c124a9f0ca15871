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
		alerts, news := s.apply(&st.f, "", sendAt, 5*time.Minute)
		if news != st.news || len(alerts) != st.alerts || s.len() != st.open {
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

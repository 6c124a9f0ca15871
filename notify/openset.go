package notify

import (
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
)

// openSet is what notify remembers of the findings topic: the latest
// record of every open finding (whose alert it keeps firing, once its hold
// ran out) and the highest seq seen of every fingerprint (so a record seen
// before is not delivered twice). It is rebuilt on start by folding the
// records already delivered (read from the topic up to the group's
// committed offsets); everything it decides follows from those records,
// the hold of each and the group's skip time, so a rebuilt set decides as
// the one before the restart did.
type openSet struct {
	mu   sync.Mutex
	open map[string]*openFinding
	seqs map[string]int
	// skipBefore: a record of a finding raised before it is seen but not
	// delivered (the group's first start found it too old to page); zero:
	// none is.
	skipBefore time.Time
	// hold returns how long a finding must stay open before it pages;
	// nil: no hold.
	hold func(*detect.Finding) time.Duration
}

// openFinding is an open finding and the labels its alert fires under.
type openFinding struct {
	f      detect.Finding
	labels map[string]string
	// due is when its hold runs out (raised_at + hold): from then on it
	// fires. sent says its alert was sent firing at least once.
	due  time.Time
	sent bool
}

// pending reports whether o still waits out its hold at now.
func (o *openFinding) pending(now time.Time) bool { return !o.sent && now.Before(o.due) }

func newOpenSet() *openSet {
	return &openSet{open: map[string]*openFinding{}, seqs: map[string]int{}}
}

// outcome is what apply decided about a record.
type outcome int

const (
	// stale: not news (its seq is not above the highest seen for its
	// fingerprint: a redelivered or stale record); nothing to deliver.
	stale outcome = iota
	// skipped: the finding was raised before the group's skip time; the
	// record is seen, and delivered to no receiver.
	skipped
	// held: the finding is open and waits out its hold; webhooks get the
	// record, Alertmanager nothing yet.
	held
	// deliver: deliver the record (the alerts may be none: the resolution
	// of a finding that never paged).
	deliver
)

// apply folds record f in and returns what to do with it, and the alerts
// that tell Alertmanager about f as of now:
//   - open, its hold run out: its alert, firing until now + lease; if the
//     finding was firing under other labels (its status or verdict
//     changed), that alert is resolved as of now in the same request, so
//     one condition is one alert;
//   - open, within its hold: none (held); the hold timer sends it;
//   - resolved: its alert under the labels it fired with (the resolved
//     record's status is usually another), ending at resolved_at; none
//     when it was resolved within its hold and never fired.
func (s *openSet) apply(f *detect.Finding, serveURL string, now time.Time, lease time.Duration) ([]Alert, outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Seq <= s.seqs[f.Fingerprint] {
		return nil, stale
	}
	s.seqs[f.Fingerprint] = f.Seq
	prev := s.open[f.Fingerprint]
	if f.RaisedAt.Before(s.skipBefore) {
		delete(s.open, f.Fingerprint)
		return nil, skipped
	}
	a := AlertOf(f, serveURL, now, lease)
	if f.State == detect.Resolved {
		delete(s.open, f.Fingerprint)
		if prev != nil && prev.pending(now) {
			return nil, deliver // resolved within its hold: it never paged
		}
		if prev != nil {
			a.Labels = prev.labels
		}
		return []Alert{a}, deliver
	}
	// A finding that paged keeps paging whatever its hold says now.
	o := &openFinding{f: *f, labels: a.Labels, due: f.RaisedAt.Add(s.holdOf(f)), sent: prev != nil && prev.sent}
	s.open[f.Fingerprint] = o
	if o.pending(now) {
		return nil, held
	}
	o.sent = true
	if prev != nil && prev.sent && !maps.Equal(prev.labels, a.Labels) {
		old := AlertOf(&prev.f, serveURL, now, 0)
		old.Labels, old.EndsAt = prev.labels, now.UTC().Truncate(time.Millisecond)
		return []Alert{old, a}, deliver
	}
	return []Alert{a}, deliver
}

func (s *openSet) holdOf(f *detect.Finding) time.Duration {
	if s.hold == nil {
		return 0
	}
	return s.hold(f)
}

// firing returns the alerts of every open finding whose hold ran out by
// now, as sent at now (endsAt now + lease), in fingerprint order, and
// marks them sent.
func (s *openSet) firing(serveURL string, now time.Time, lease time.Duration) []Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	fps := make([]string, 0, len(s.open))
	for fp, o := range s.open {
		if !o.pending(now) {
			fps = append(fps, fp)
		}
	}
	sort.Strings(fps)
	out := make([]Alert, 0, len(fps))
	for _, fp := range fps {
		o := s.open[fp]
		o.sent = true
		a := AlertOf(&o.f, serveURL, now, lease)
		a.Labels = o.labels
		out = append(out, a)
	}
	return out
}

// nextDue returns the earliest time a finding held at now stops being
// held, and false when none is held.
func (s *openSet) nextDue(now time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, o := range s.open {
		if o.pending(now) && (next.IsZero() || o.due.Before(next)) {
			next = o.due
		}
	}
	return next, !next.IsZero()
}

// counts returns the number of open findings and of those held at now.
func (s *openSet) counts(now time.Time) (open, pending int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.open {
		if o.pending(now) {
			pending++
		}
	}
	return len(s.open), pending
}

// len returns the number of open findings.
func (s *openSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

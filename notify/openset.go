package notify

import (
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

// openSet is what notify remembers of the findings topic: the latest
// record of every open finding (whose alert it keeps firing, once its hold
// ran out), the open findings that are blocked by an upstream batch (which
// page through their root's alert, never their own: docs/incidents.md),
// and the highest seq seen of every fingerprint (so a record seen before
// is not delivered twice). It is rebuilt on start by folding the records
// already delivered (read from the topic up to the group's committed
// offsets); everything it decides follows from those records, the hold of
// each and the group's skip time, so a rebuilt set decides as the one
// before the restart did.
type openSet struct {
	mu      sync.Mutex
	open    map[string]*openFinding
	blocked map[string]*blockedFinding
	seqs    map[string]int
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

// blockedFinding is an open blocked finding: its batch and the incidents
// (the roots' fingerprints) whose blast radius it is part of.
type blockedFinding struct {
	batch     string
	incidents []string
}

// BlastRadiusShown is how many downstream batches an alert names; the
// count covers them all.
const BlastRadiusShown = 10

func newOpenSet() *openSet {
	return &openSet{open: map[string]*openFinding{}, blocked: map[string]*blockedFinding{}, seqs: map[string]int{}}
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
	// of a finding that never paged, or a blocked finding).
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
//     when it was resolved within its hold and never fired, or was born
//     resolved;
//   - blocked (its diagnosis names an upstream cause): no alert of its
//     own (an alert it fired before it was blocked ends now); the alerts
//     of its roots' open findings are sent again with the blast radius;
//     the same when a blocked finding resolves or falls back to its own
//     cause.
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
		delete(s.blocked, f.Fingerprint)
		return nil, skipped
	}
	var touched []string // incidents whose blast radius changed
	if pb := s.blocked[f.Fingerprint]; pb != nil {
		touched = append(touched, pb.incidents...)
		delete(s.blocked, f.Fingerprint)
	}
	var out []Alert
	res := deliver
	switch {
	case f.State == detect.Resolved:
		delete(s.open, f.Fingerprint)
		switch {
		case prev != nil && prev.pending(now):
			// Resolved within its hold: it never paged.
		case prev != nil || (touched == nil && f.Seq > 1):
			// A record born resolved (seq 1: a boundary proven after
			// its deadline, the lateness on record) never fired:
			// Alertmanager has nothing to end.
			a := AlertOf(f, serveURL, now, lease)
			if prev != nil {
				a.Labels = prev.labels
			}
			out = append(out, a)
		}
	case f.IsBlocked():
		bf := &blockedFinding{batch: f.Batch.String()}
		for _, r := range f.Diagnosis.Blocked.Roots {
			if k, err := model.ParseBatchKey(r.Batch); err == nil {
				bf.incidents = append(bf.incidents, detect.RootFingerprint(k))
			}
		}
		s.blocked[f.Fingerprint] = bf
		touched = append(touched, bf.incidents...)
		if prev != nil {
			// It paged on its own cause (or waited to); now its root
			// speaks for it.
			delete(s.open, f.Fingerprint)
			if prev.sent {
				old := AlertOf(&prev.f, serveURL, now, 0)
				old.Labels, old.EndsAt = prev.labels, now.UTC().Truncate(time.Millisecond)
				out = append(out, old)
			}
		}
	default:
		a := AlertOf(f, serveURL, now, lease)
		// A finding that paged keeps paging whatever its hold says now.
		o := &openFinding{f: *f, labels: a.Labels, due: f.RaisedAt.Add(s.holdOf(f)), sent: prev != nil && prev.sent}
		s.open[f.Fingerprint] = o
		if o.pending(now) {
			res = held
			break
		}
		o.sent = true
		if prev != nil && prev.sent && !maps.Equal(prev.labels, a.Labels) {
			old := AlertOf(&prev.f, serveURL, now, 0)
			old.Labels, old.EndsAt = prev.labels, now.UTC().Truncate(time.Millisecond)
			out = append(out, old)
		}
		s.radius(&a, f)
		out = append(out, a)
	}
	out = append(out, s.rootAlerts(touched, f.Fingerprint, serveURL, now, lease)...)
	if res == held && len(out) > 0 {
		// Held itself, but the root alerts it was part of change.
		res = deliver
	}
	return out, res
}

// rootAlerts returns the alerts of the open findings of incidents (but
// the one of fingerprint skip, already in the request) that have paged,
// with their blast radius as it stands now.
func (s *openSet) rootAlerts(incidents []string, skip, serveURL string, now time.Time, lease time.Duration) []Alert {
	if len(incidents) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, i := range incidents {
		want[i] = true
	}
	var fps []string
	for fp, o := range s.open {
		if fp != skip && want[o.f.Root] && !o.pending(now) {
			fps = append(fps, fp)
		}
	}
	return s.fire(fps, serveURL, now, lease)
}

// radius adds the blast radius of f's incident to its alert: how many
// batches its blocked findings are of, and the first of them in key
// order. An incident nothing waits on gets nothing added.
func (s *openSet) radius(a *Alert, f *detect.Finding) {
	if f.Root == "" {
		return
	}
	seen := map[string]bool{}
	for _, b := range s.blocked {
		for _, i := range b.incidents {
			if i == f.Root {
				seen[b.batch] = true
			}
		}
	}
	if len(seen) == 0 {
		return
	}
	batches := make([]string, 0, len(seen))
	for b := range seen {
		batches = append(batches, b)
	}
	sort.Strings(batches)
	shown := batches[:min(len(batches), BlastRadiusShown)]
	a.Annotations["incident"] = f.Root
	a.Annotations["blast_radius"] = strconv.Itoa(len(batches))
	list := strings.Join(shown, ", ")
	if len(batches) > len(shown) {
		list += ", and " + strconv.Itoa(len(batches)-len(shown)) + " more"
	}
	a.Annotations["blast_radius_batches"] = list
	a.Annotations["description"] += " Blast radius: " + strconv.Itoa(len(batches)) + " downstream batches wait on this one (" + list + ")."
}

func (s *openSet) holdOf(f *detect.Finding) time.Duration {
	if s.hold == nil {
		return 0
	}
	return s.hold(f)
}

// fire returns the alerts of the open findings fps, in fingerprint order,
// as sent at now (endsAt now + lease) with their blast radius, and marks
// them sent. The caller holds s.mu.
func (s *openSet) fire(fps []string, serveURL string, now time.Time, lease time.Duration) []Alert {
	sort.Strings(fps)
	out := make([]Alert, 0, len(fps))
	for _, fp := range fps {
		o := s.open[fp]
		o.sent = true
		a := AlertOf(&o.f, serveURL, now, lease)
		a.Labels = o.labels
		s.radius(&a, &o.f)
		out = append(out, a)
	}
	return out
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
	return s.fire(fps, serveURL, now, lease)
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

// len returns the number of open findings that page (blocked ones are
// not counted: they page through their root).
func (s *openSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// blockedLen returns the number of open blocked findings.
func (s *openSet) blockedLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blocked)
}

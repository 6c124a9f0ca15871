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
// record of every open finding (whose alert it keeps firing), the open
// findings that are blocked by an upstream batch (which page through
// their root's alert, never their own: docs/incidents.md), and the
// highest seq seen of every fingerprint (so a record seen before is not
// delivered twice). It is rebuilt on start by folding the records already
// delivered (read from the topic up to the group's committed offsets).
type openSet struct {
	mu      sync.Mutex
	open    map[string]*openFinding
	blocked map[string]*blockedFinding
	seqs    map[string]int
}

// openFinding is an open finding and the labels its alert fires under.
type openFinding struct {
	f      detect.Finding
	labels map[string]string
}

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

// apply folds record f in. It reports false when f is not news (its seq is
// not above the highest seen for its fingerprint: a redelivered or stale
// record), and otherwise returns the alerts that tell Alertmanager about f
// as of now:
//   - open: its alert, firing until now + lease; if the finding was firing
//     under other labels (its status or verdict changed), that alert is
//     resolved as of now in the same request, so one condition is one alert;
//   - resolved: its alert under the labels it fired with (the resolved
//     record's status is usually another), ending at resolved_at;
//   - blocked (its diagnosis names an upstream cause): no alert of its
//     own (an alert it fired before it was blocked ends now); the alerts
//     of its roots' open findings are sent again with the blast radius;
//     the same when a blocked finding resolves or falls back to its own
//     cause.
func (s *openSet) apply(f *detect.Finding, serveURL string, now time.Time, lease time.Duration) ([]Alert, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Seq <= s.seqs[f.Fingerprint] {
		return nil, false
	}
	s.seqs[f.Fingerprint] = f.Seq
	prev := s.open[f.Fingerprint]
	var touched []string // incidents whose blast radius changed
	if pb := s.blocked[f.Fingerprint]; pb != nil {
		touched = append(touched, pb.incidents...)
		delete(s.blocked, f.Fingerprint)
	}
	var out []Alert
	switch {
	case f.State == detect.Resolved:
		delete(s.open, f.Fingerprint)
		// A record born resolved (seq 1: a boundary proven after its
		// deadline, the lateness on record) never fired: Alertmanager
		// has nothing to end.
		if prev != nil || (touched == nil && f.Seq > 1) {
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
			// It paged on its own cause; now its root speaks for it.
			delete(s.open, f.Fingerprint)
			old := AlertOf(&prev.f, serveURL, now, 0)
			old.Labels, old.EndsAt = prev.labels, now.UTC().Truncate(time.Millisecond)
			out = append(out, old)
		}
	default:
		a := AlertOf(f, serveURL, now, lease)
		s.open[f.Fingerprint] = &openFinding{f: *f, labels: a.Labels}
		if prev != nil && !maps.Equal(prev.labels, a.Labels) {
			old := AlertOf(&prev.f, serveURL, now, 0)
			old.Labels, old.EndsAt = prev.labels, now.UTC().Truncate(time.Millisecond)
			out = append(out, old)
		}
		s.radius(&a, f)
		out = append(out, a)
	}
	return append(out, s.rootAlerts(touched, f.Fingerprint, serveURL, now, lease)...), true
}

// rootAlerts returns the alerts of the open findings of incidents (but
// the one of fingerprint skip, already in the request), with their blast
// radius as it stands now.
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
		if fp != skip && want[o.f.Root] {
			fps = append(fps, fp)
		}
	}
	sort.Strings(fps)
	out := make([]Alert, 0, len(fps))
	for _, fp := range fps {
		o := s.open[fp]
		a := AlertOf(&o.f, serveURL, now, lease)
		a.Labels = o.labels
		s.radius(&a, &o.f)
		out = append(out, a)
	}
	return out
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

// firing returns the alerts of every open finding as sent at now (endsAt
// now + lease), in fingerprint order.
func (s *openSet) firing(serveURL string, now time.Time, lease time.Duration) []Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	fps := make([]string, 0, len(s.open))
	for fp := range s.open {
		fps = append(fps, fp)
	}
	sort.Strings(fps)
	out := make([]Alert, 0, len(fps))
	for _, fp := range fps {
		o := s.open[fp]
		a := AlertOf(&o.f, serveURL, now, lease)
		a.Labels = o.labels
		s.radius(&a, &o.f)
		out = append(out, a)
	}
	return out
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

package notify

import (
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
)

// openSet is what notify remembers of the findings topic: the latest
// record of every open finding (whose alert it keeps firing) and the
// highest seq seen of every fingerprint (so a record seen before is not
// delivered twice). It is rebuilt on start by folding the records already
// delivered (read from the topic up to the group's committed offsets).
type openSet struct {
	mu   sync.Mutex
	open map[string]*openFinding
	seqs map[string]int
}

// openFinding is an open finding and the labels its alert fires under.
type openFinding struct {
	f      detect.Finding
	labels map[string]string
}

func newOpenSet() *openSet {
	return &openSet{open: map[string]*openFinding{}, seqs: map[string]int{}}
}

// apply folds record f in. It reports false when f is not news (its seq is
// not above the highest seen for its fingerprint: a redelivered or stale
// record), and otherwise returns the alerts that tell Alertmanager about f
// as of now:
//   - open: its alert, firing until now + lease; if the finding was firing
//     under other labels (its status or verdict changed), that alert is
//     resolved as of now in the same request, so one condition is one alert;
//   - resolved: its alert under the labels it fired with (the resolved
//     record's status is usually another), ending at resolved_at.
func (s *openSet) apply(f *detect.Finding, serveURL string, now time.Time, lease time.Duration) ([]Alert, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Seq <= s.seqs[f.Fingerprint] {
		return nil, false
	}
	s.seqs[f.Fingerprint] = f.Seq
	prev := s.open[f.Fingerprint]
	a := AlertOf(f, serveURL, now, lease)
	if f.State == detect.Resolved {
		delete(s.open, f.Fingerprint)
		if prev != nil {
			a.Labels = prev.labels
		}
		return []Alert{a}, true
	}
	s.open[f.Fingerprint] = &openFinding{f: *f, labels: a.Labels}
	if prev != nil && !maps.Equal(prev.labels, a.Labels) {
		old := AlertOf(&prev.f, serveURL, now, 0)
		old.Labels, old.EndsAt = prev.labels, now.UTC().Truncate(time.Millisecond)
		return []Alert{old, a}, true
	}
	return []Alert{a}, true
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
		out = append(out, a)
	}
	return out
}

// len returns the number of open findings.
func (s *openSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

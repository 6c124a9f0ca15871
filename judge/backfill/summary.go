package backfill

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/progress"
	"github.com/handoff-dev/handoff/model"
)

// Statuses lists the statuses in the order the summary prints them.
var Statuses = [...]replay.Status{replay.StatusDelivered, replay.StatusInProgress, replay.StatusLate, replay.StatusFailed, replay.StatusBroken}

// Break is where batches of a pipeline stopped: the first missing
// boundary.
type Break struct {
	Pipeline     string
	FirstMissing string
}

// BreakCount is a Break and how many batches stopped there.
type BreakCount struct {
	Break
	Batches int
}

// tally counts one chunk's diagnoses (on a worker); Summary adds them up.
type tally struct {
	batches int
	status  [len(Statuses)]int
	verdict [model.Delivered + 1]int
	breaks  map[Break]int
}

func (t *tally) add(d *replay.Diagnosis) {
	t.batches++
	t.status[max(0, slices.Index(Statuses[:], d.Status))]++
	if d.Verdict >= 0 && d.Verdict <= model.Delivered {
		t.verdict[d.Verdict]++
	}
	if d.Status != replay.StatusDelivered && d.FirstMissing != "" {
		if t.breaks == nil {
			t.breaks = make(map[Break]int)
		}
		k := Break{d.Pipeline, d.FirstMissing}
		if n, ok := t.breaks[k]; ok {
			t.breaks[k] = n + 1
		} else {
			// The map keeps its own copy: the diagnosis' strings are
			// reused by the batches after it.
			t.breaks[Break{strings.Clone(d.Pipeline), strings.Clone(d.FirstMissing)}] = 1
		}
	}
}

// Summary is what a backfill found.
type Summary struct {
	Plan
	// Batches diagnosed, by status and by verdict.
	Batches int
	Status  map[replay.Status]int
	Verdict map[model.Hypothesis]int
	// Breaks counts the batches not delivered whose first missing boundary
	// is known, by pipeline and boundary.
	Breaks map[Break]int
	// Published is the number of diagnoses acknowledged by Kafka (set by
	// the caller that published them).
	Published int
	// Events is the number of events folded (each event_id once; the
	// dates read for context included).
	Events int64
	Took   time.Duration
}

func newSummary(p Plan) *Summary {
	return &Summary{Plan: p, Status: map[replay.Status]int{}, Verdict: map[model.Hypothesis]int{}, Breaks: map[Break]int{}}
}

func (s *Summary) add(t *tally) {
	s.Batches += t.batches
	for i, n := range t.status {
		if n > 0 {
			s.Status[Statuses[i]] += n
		}
	}
	for h, n := range t.verdict {
		if n > 0 {
			s.Verdict[model.Hypothesis(h)] += n
		}
	}
	for b, n := range t.breaks {
		s.Breaks[b] += n
	}
}

// TopBreaks returns the n breaks with the most batches, most first (ties
// by pipeline, then boundary).
func (s *Summary) TopBreaks(n int) []BreakCount {
	out := make([]BreakCount, 0, len(s.Breaks))
	for b, c := range s.Breaks {
		out = append(out, BreakCount{b, c})
	}
	slices.SortFunc(out, func(a, b BreakCount) int {
		return cmp.Or(cmp.Compare(b.Batches, a.Batches), strings.Compare(a.Pipeline, b.Pipeline), strings.Compare(a.FirstMissing, b.FirstMissing))
	})
	return out[:min(n, len(out))]
}

// WriteText writes the summary for people, for example
//
//	backfill: 2026-01-01..2026-12-31 as of 2027-01-02T00:00:00.000Z: 1,000 pipelines, 365,000 batches, 4,012,345 events in 19.8s (202,643 events/s)
//	by status:  delivered 292,000, late 51,100, failed 10,950, broken 10,950
//	by verdict: delivered 292,000, not_transferred 10,950, not_identified 51,100, ...
//	top breaks (first missing boundary x pipeline):
//	  1,203  signal_delivered  account-balance-snapshot.daily
func (s *Summary) WriteText(w io.Writer, from, to model.Date, asOf time.Time, top int) error {
	rate := 0.0
	if s.Took > 0 {
		rate = float64(s.Events) / s.Took.Seconds()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "backfill: %s..%s as of %s: %s, %s, %s in %.1fs (%s events/s)",
		from, to, asOf.UTC().Format("2006-01-02T15:04:05.000Z"), plural(int64(s.Pipelines), "pipeline", "pipelines"),
		plural(int64(s.Batches), "batch", "batches"), plural(s.Events, "event", "events"), s.Took.Seconds(), progress.Thousands(int64(rate+0.5)))
	if s.Published > 0 {
		fmt.Fprintf(&b, ", %s diagnoses published", progress.Thousands(int64(s.Published)))
	}
	b.WriteString("\nby status: ")
	var parts []string
	for _, st := range Statuses {
		if n := s.Status[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", st, progress.Thousands(int64(n))))
		}
	}
	b.WriteString(orNone(parts))
	b.WriteString("\nby verdict: ")
	parts = parts[:0]
	for h := model.NotProduced; h <= model.Delivered; h++ {
		if n := s.Verdict[h]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", h, progress.Thousands(int64(n))))
		}
	}
	b.WriteString(orNone(parts))
	b.WriteString("\n")
	if tb := s.TopBreaks(top); len(tb) > 0 {
		b.WriteString("top breaks (batches, first missing boundary, pipeline):\n")
		for _, t := range tb {
			fmt.Fprintf(&b, "  %9s  %-16s  %s\n", progress.Thousands(int64(t.Batches)), t.FirstMissing, t.Pipeline)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural writes n (with thousands separators) and the word for it.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return progress.Thousands(n) + " " + many
}

func orNone(parts []string) string {
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

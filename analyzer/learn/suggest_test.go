package learn

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	_ "time/tzdata"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// testZones are the candidates the learner picks from: more than the
// generator uses, so that it must tell them apart.
func testZones(t testing.TB) []*time.Location {
	var out []*time.Location
	for _, n := range []string{"UTC", "Europe/London", "Europe/Berlin", "America/New_York", "America/Chicago", "America/Los_Angeles",
		"Asia/Kolkata", "Asia/Shanghai", "Asia/Tokyo", "Australia/Sydney"} {
		loc, err := time.LoadLocation(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, loc)
	}
	return out
}

// deadlineSlack is what the check allows beyond the documented margin:
// the rounding up to 5 minutes, plus 10 minutes for the sampling error of
// a 95th percentile learned from as few as 35 batches, re-runs among them.
const deadlineSlack = 15.0 // minutes

// TestSuggestReproducesContracts generates 90 days of 204 pipelines whose
// contracts the test knows and the learner does not, and checks that the
// suggestions reproduce them: schedule, holidays, batch_id, artifact and
// signal templates and required boundaries for at least 95% of the
// pipelines, and every deadline within the documented margin of the true
// arrival distribution (docs/learned.md, The test).
func TestSuggestReproducesContracts(t *testing.T) {
	l := New()
	events := 0
	truths := generate(t, 204, 21, func(e *model.Event) { events++; l.Add(e) })
	sugg := l.Suggest(Options{Zones: testZones(t)})
	if len(sugg) != len(truths) {
		t.Fatalf("%d suggestions for %d pipelines", len(sugg), len(truths))
	}
	byName := map[string]Suggestion{}
	for _, s := range sugg {
		byName[s.Pipeline] = s
	}
	cols := []string{"schedule", "holidays", "batch_id", "artifact", "signal", "required", "deadlines"}
	type row struct{ n, ok [7]int }
	rows := map[string]*row{}
	allOK, deadlineFail := 0, 0
	var failures []string
	for _, tr := range truths {
		s := byName[tr.c.Pipeline]
		c, err := contract.Parse(tr.c.Pipeline+".yaml", s.YAML)
		if err != nil {
			t.Fatalf("suggestion for %s does not load: %v\n%s", tr.c.Pipeline, err, s.YAML)
		}
		got := compare(tr, c)
		rw := rows[tr.kind]
		if rw == nil {
			rw = &row{}
			rows[tr.kind] = rw
		}
		all := true
		for i, ok := range got {
			rw.n[i]++
			if ok {
				rw.ok[i]++
			} else {
				all = false
				failures = append(failures, fmt.Sprintf("%s: %s", tr.c.Pipeline, cols[i]))
			}
		}
		if !got[6] {
			deadlineFail++
		}
		if all {
			allOK++
		} else if len(failures) < 12 {
			t.Logf("%s differs:\ntrue:\n%s\nsuggested:\n%s", tr.c.Pipeline, tr.yaml, s.YAML)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d pipelines, %d events, %s to %s\n%-12s %4s", len(truths), events, histFirst, histLast, "kind", "n")
	for _, c := range cols {
		fmt.Fprintf(&b, " %9s", c)
	}
	b.WriteString("\n")
	var kindsSeen []string
	for k := range rows {
		kindsSeen = append(kindsSeen, k)
	}
	sort.Strings(kindsSeen)
	var tot row
	for _, k := range kindsSeen {
		rw := rows[k]
		fmt.Fprintf(&b, "%-12s %4d", k, rw.n[0])
		for i := range cols {
			fmt.Fprintf(&b, " %9s", fmt.Sprintf("%d/%d", rw.ok[i], rw.n[i]))
			tot.n[i] += rw.n[i]
			tot.ok[i] += rw.ok[i]
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%-12s %4d", "all", tot.n[0])
	for i := range cols {
		fmt.Fprintf(&b, " %9s", fmt.Sprintf("%d/%d", tot.ok[i], tot.n[i]))
	}
	fmt.Fprintf(&b, "\nevery line right: %d/%d (%.1f%%)", allOK, len(truths), 100*float64(allOK)/float64(len(truths)))
	t.Log("\n" + b.String())
	if float64(allOK) < 0.95*float64(len(truths)) {
		t.Errorf("%d of %d suggestions reproduce the true contract, want at least 95%%: %v", allOK, len(truths), failures)
	}
	if deadlineFail > 0 {
		t.Errorf("%d pipelines have a deadline outside the documented margin", deadlineFail)
	}
}

// compare says which lines of the suggestion c reproduce the true
// contract: by what they mean (the batches expected, the names rendered),
// not by their text.
func compare(tr *truth, c *contract.Contract) [7]bool {
	var got [7]bool
	bare := func(x *contract.Contract) *contract.Contract {
		y := *x
		y.Holidays = nil
		return &y
	}
	want, have := bare(tr.c).Expected(histFirst, histLast), bare(c).Expected(histFirst, histLast)
	got[0] = len(want) > 0 && sameStarts(bare(tr.c), want, bare(c), have)
	var trueHol []model.Date
	trueHol = append(trueHol, tr.c.Holidays...)
	got[1] = slices.Equal(trueHol, c.Holidays)
	got[2] = len(want) == len(have)
	for i := 0; got[2] && i < len(want); i++ {
		got[2] = want[i] == have[i]
	}
	got[3], got[4] = true, true
	for _, k := range want {
		a1, ok1 := tr.c.ArtifactName(k)
		a2, ok2 := c.ArtifactName(k)
		got[3] = got[3] && ok1 == ok2 && a1 == a2
		s1, ok1 := tr.c.SignalName(k)
		s2, ok2 := c.SignalName(k)
		got[4] = got[4] && ok1 == ok2 && s1 == s2
	}
	got[5] = c.Required == tr.required
	got[6] = deadlinesWithin(tr, c)
	return got
}

// sameStarts reports whether two contracts expect batches at the same
// instants.
func sameStarts(a *contract.Contract, ka []model.BatchKey, b *contract.Contract, kb []model.BatchKey) bool {
	if len(ka) != len(kb) {
		return false
	}
	for i := range ka {
		sa, ok1 := a.Start(ka[i])
		sb, ok2 := b.Start(kb[i])
		if !ok1 || !ok2 || ka[i].BusinessDate != kb[i].BusinessDate {
			return false
		}
		// A once-a-day batch starts at midnight of its zone: a zone a
		// fixed offset away (Asia/Shanghai taken for UTC) moves the start,
		// not the batches; sub-daily starts must agree to the minute.
		if tr := a.Schedule; tr != contract.Daily && tr != contract.Weekdays && !strings.HasPrefix(string(tr), "0 0 ") && !sa.Equal(sb) {
			return false
		}
	}
	return true
}

// deadlinesWithin reports whether every required boundary has a deadline
// and, for every batch that arrived normally, the suggested deadline lies
// between the true 95th percentile of its arrivals and that plus the
// documented margin (the larger of 30 minutes and p95 − p50) plus
// deadlineSlack.
func deadlinesWithin(tr *truth, c *contract.Contract) bool {
	never := func(model.Boundary) (time.Time, bool) { return time.Time{}, false }
	for _, b := range tr.required.List() {
		if c.Deadlines[b].Kind == contract.NoDeadline {
			return false
		}
		v := append([]float64(nil), tr.normal[b]...)
		sort.Float64s(v)
		p50, p95 := quantile(v, 0.5), quantile(v, 0.95)
		hi := p95 + math.Max(marginMin.Minutes(), p95-p50) + deadlineSlack
		for _, k := range tr.keys {
			due, ok := c.Due(b, k, never, time.Time{})
			if !ok {
				return false
			}
			// Measured in instants: on a daylight-saving night a deadline's
			// wall-clock time may not exist, and moves with the gap.
			var lo time.Time
			if tr.timed {
				lo, _ = tr.c.Start(k)
				lo = lo.Add(minutes(p95))
			} else {
				lo = wallMinutes(k.BusinessDate, p95, tr.zone)
			}
			off := p95 + due.Sub(lo).Minutes()
			// Where a daylight-saving night repeats the wall-clock time,
			// the same deadline reads either way: compare the wall clock.
			wall := off
			if !tr.timed {
				wall = offset(due.UnixMilli(), k, 0, false, tr.zone)
			}
			if (off < p95-0.01 || off > hi) && (wall < p95-0.01 || wall > hi) {
				if testing.Verbose() {
					fmt.Printf("%s %s: deadline at %.1f, true p50 %.1f p95 %.1f, allowed up to %.1f\n", k, b, off, p50, p95, hi)
				}
				return false
			}
		}
	}
	return true
}

func minutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

// wallMinutes is the generator's anchor: m minutes of wall clock after
// midnight of d in loc.
func wallMinutes(d model.Date, m float64, loc *time.Location) time.Time {
	whole := int(m)
	return time.Date(d.Year, d.Month, d.Day, 0, whole, 0, 0, loc).Add(minutes(m - float64(whole)))
}

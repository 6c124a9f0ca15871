package learn

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// seedLike feeds days of the seed case's shape: one daily batch, the
// whole ladder, names from the batch id.
func seedLike(l *Learner, first model.Date, days int) {
	types := []model.EventType{model.JobStarted, model.ArtifactFinalized, model.JobSucceeded, model.SignalPublished,
		model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified, model.ConsumeSucceeded}
	for i := range days {
		d := first.AddDays(i)
		for j, typ := range types {
			e := &model.Event{Type: typ, Pipeline: "account-balance-snapshot.daily", BusinessDate: d, BatchID: d.Compact(),
				Time: time.Date(d.Year, d.Month, d.Day, 17, 0, j*3+i%7, 0, time.UTC)}
			switch {
			case typ.IsArtifact():
				e.Object = "account_balance_snapshot_" + d.Compact() + ".csv"
			case typ.IsSignal():
				e.Object = "account_balance_snapshot_" + d.Compact() + ".flag"
			}
			l.Add(e)
		}
	}
}

// The seed case's two days support no line but the pipeline: every other
// line says "too few batches", and the file still loads.
func TestSuggestTooFewBatches(t *testing.T) {
	l := New()
	seedLike(l, model.MustParseDate("2026-09-29"), 2)
	s := l.Suggest(Options{})
	if len(s) != 1 {
		t.Fatalf("%d suggestions, want 1", len(s))
	}
	c, err := contract.Parse("x.yaml", s[0].YAML)
	if err != nil {
		t.Fatalf("suggestion does not load: %v\n%s", err, s[0].YAML)
	}
	if c.Schedule != contract.NoSchedule || !c.BatchID.IsZero() || !c.Artifact.IsZero() || c.Required != model.AllBoundaries {
		t.Errorf("learned from two batches:\n%s", s[0].YAML)
	}
	text := string(s[0].YAML)
	for _, want := range []string{"not learned: schedule: 2 business dates", "too few batches", "not learned: required", "not learned: deadlines"} {
		if !strings.Contains(text, want) {
			t.Errorf("suggestion lacks %q:\n%s", want, text)
		}
	}
}

// Three weeks of the same pipeline support every line, and Diff names
// what an existing contract says otherwise.
func TestSuggestAndDiff(t *testing.T) {
	l := New()
	seedLike(l, model.MustParseDate("2026-09-01"), 21)
	s := l.Suggest(Options{})[0]
	c, err := contract.Parse("x.yaml", s.YAML)
	if err != nil {
		t.Fatalf("suggestion does not load: %v\n%s", err, s.YAML)
	}
	if c.Schedule != contract.Daily || c.BatchID.String() != "{yyyymmdd}" || c.Artifact.String() != "account_balance_snapshot_{batch_id}.csv" ||
		c.Signal.String() != "account_balance_snapshot_{batch_id}.flag" || c.Required != model.AllBoundaries {
		t.Errorf("suggestion:\n%s", s.YAML)
	}
	if got := c.Deadlines[model.Consumed].Text; got != "business_date 17:35" {
		t.Errorf("consumed deadline %q, want business_date 17:35 (p95 17:00:27 + 30m, rounded up to 5 minutes)\n%s", got, s.YAML)
	}
	existing, err := contract.Parse("old.yaml", []byte("pipeline: account-balance-snapshot.daily\nschedule: weekdays\nbatch_id: \"{yyyymmdd}\"\nrequired: [produced, consumed]\ndeadlines:\n  consumed: \"business_date + 1d 06:00\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	diff, err := Diff(existing, s)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(diff, "\n")
	for _, want := range []string{"schedule: contract weekdays, suggested daily", "artifact: contract (none), suggested account_balance_snapshot_{batch_id}.csv",
		"required: contract [produced, consumed], suggested [produced, finalized, signaled, transferred, signal_delivered, identified, consumed]",
		"deadlines.consumed: contract business_date + 1d 06:00, suggested business_date 17:35"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains("\n"+got, "\nbatch_id:") {
		t.Errorf("diff names batch_id, which agrees:\n%s", got)
	}
}

func TestCronText(t *testing.T) {
	wd := func(ds ...int) (out [7]bool) {
		for _, d := range ds {
			out[d] = true
		}
		return out
	}
	for _, tc := range []struct {
		days  [7]bool
		slots []int
		timed bool
		want  string
	}{
		{wd(0, 1, 2, 3, 4, 5, 6), nil, false, "daily"},
		{wd(1, 2, 3, 4, 5), nil, false, "weekdays"},
		{wd(1, 3, 5), nil, false, "0 0 * * 1,3,5"},
		{wd(1, 2, 3, 4, 5, 6), nil, false, "0 0 * * 1-6"},
		{wd(0, 1, 2, 3, 4, 5, 6), every(0, 60), true, "hourly"},
		{wd(0, 1, 2, 3, 4, 5, 6), every(0, 360), true, "0 */6 * * *"},
		{wd(1, 2, 3, 4, 5), []int{510, 750, 990, 1230}, true, "30 8,12,16,20 * * 1-5"},
		{wd(0, 6), []int{60, 125}, true, ""}, // 01:00 and 02:05 are not minutes × hours
	} {
		if got := cronText(tc.days, tc.slots, tc.timed); got != tc.want {
			t.Errorf("cronText(%v, %v) = %q, want %q", tc.days, tc.slots, got, tc.want)
		}
		if tc.want != "" {
			if _, err := contract.Parse("x.yaml", []byte(fmt.Sprintf("pipeline: p\nschedule: %q\nbatch_id: \"{yyyymmdd}{hh}{mi}\"\n", tc.want))); err != nil && tc.timed {
				t.Errorf("%q does not load: %v", tc.want, err)
			}
		}
	}
}

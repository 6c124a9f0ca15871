package learn

import (
	"slices"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// TestForgetThenAddAgain: an event of a batch Forget dropped is learned
// again, even when it is the batch of the event added just before the
// Forget (Add remembers that batch to spare the lookups of its next
// events).
func TestForgetThenAddAgain(t *testing.T) {
	date := model.MustParseDate("2026-10-01")
	e := model.Event{Spec: model.SpecV1, ID: "e1", Type: model.JobStarted, Time: time.Date(2026, 10, 1, 17, 0, 0, 0, time.UTC),
		Pipeline: "p", BusinessDate: date, BatchID: "20261001", System: model.Producer}
	l := New()
	l.Add(&e)
	l.Forget(date.AddDays(1))
	if got := l.Pipelines(); len(got) != 0 {
		t.Fatalf("after Forget: pipelines %v, want none", got)
	}
	e.ID, e.Type, e.Time = "e2", model.JobSucceeded, e.Time.Add(time.Minute)
	l.Add(&e)
	if got := l.Pipelines(); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("an event of a batch forgotten, added again: pipelines %v, want [p]", got)
	}
	if n := len(l.pipes["p"].batches); n != 1 {
		t.Fatalf("batches of p: %d, want 1", n)
	}
}

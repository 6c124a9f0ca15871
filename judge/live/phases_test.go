package live_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/judge/stream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// oneEventHistory is a History holding one stored event and no finding.
type oneEventHistory struct{ e model.Event }

func (h oneEventHistory) PartitionEvents(_ context.Context, _ string, _ []int, _ model.Date, fn func(*model.Event) error) error {
	return fn(&h.e)
}
func (oneEventHistory) BatchEvents(context.Context, model.BatchKey, func(*model.Event) error) error {
	return nil
}
func (oneEventHistory) Findings(context.Context, model.Date, history.EventsPartitions, func(model.BatchKey) bool, func(*detect.Finding) error) error {
	return nil
}

// records keeps the records logged.
type records struct {
	mu  sync.Mutex
	got []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, r.Clone())
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// TestRestoreLogsItsPhases: the log of a restore splits its time between
// the waits (for the ingester's and the results consumer's commits) and
// the reads, so that a slow takeover tells which it was.
func TestRestoreLogsItsPhases(t *testing.T) {
	set := seedContracts(t)
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	e := model.Event{Spec: model.SpecV1, ID: "e1", Type: model.JobStarted, Time: now.Add(-time.Hour), Pipeline: "p",
		BusinessDate: model.Date{Year: 2026, Month: 12, Day: 1}, BatchID: "20261201", System: model.Producer}
	var h records
	var pub discard
	r, err := live.New(live.Settings{EventsTopic: "events", FindingsTopic: "findings", IngestGroup: "i", ResultsGroup: "r"},
		live.Options{Detector: d, History: oneEventHistory{e}, Offsets: noOffsets{}, Publisher: &pub,
			Now: func() time.Time { return now }, Logger: slog.New(&h)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Assign(context.Background(), stream.Assignment{Start: map[int]int64{0: 0}, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var attrs map[string]string
	for _, rec := range h.got {
		if rec.Message == "detect: history restored" {
			attrs = map[string]string{}
			rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		}
	}
	if attrs == nil {
		t.Fatal(`no "detect: history restored" logged`)
	}
	if attrs["events"] != "1" {
		t.Errorf("events %q, want 1", attrs["events"])
	}
	took, err := time.ParseDuration(attrs["took"])
	if err != nil {
		t.Fatalf("took %q: %v", attrs["took"], err)
	}
	var sum time.Duration
	for _, k := range []string{"waited_for_ingest", "read_events", "waited_for_results", "read_findings"} {
		v, err := time.ParseDuration(attrs[k])
		if err != nil || v < 0 {
			t.Errorf("%s %q: want a duration (%v)", k, attrs[k], err)
		}
		sum += v
	}
	// Each phase is rounded to the millisecond, as took is.
	if sum > took+4*time.Millisecond {
		t.Errorf("the phases add up to %s, more than took %s", sum, took)
	}
	t.Logf("logged %v", slices.Sorted(maps.Keys(attrs)))
}

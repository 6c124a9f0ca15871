package batches_test

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model/contract"
)

type hourly struct{ c *contract.Contract }

func (h hourly) For(string) *contract.Contract { return h.c }

// TestStandInSkipsOtherSlots: under an hourly schedule the other hours of
// a date are batches in their own right, not re-runs of a missing hour;
// a declared re-run of the hour ({batch_id}-r{n}) is; an undeclared id is
// nothing.
func TestStandInSkipsOtherSlots(t *testing.T) {
	c, err := contract.Parse("hourly.yaml", []byte("pipeline: p\nschedule: hourly\nbatch_id: \"{yyyymmdd}{hh}\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		batches []string // delivered batch ids of 2026-10-02
		wantGap bool
	}{
		{"previous hour delivered", []string{"2026100205", "2026100206", "2026100207"}, false},
		{"previous hour missing, other hours are not re-runs", []string{"2026100205", "2026100207", "2026100208"}, true},
		{"a declared re-run of the previous hour counts", []string{"2026100205", "2026100206-r2", "2026100207"}, false},
		{"an undeclared id does not", []string{"2026100205", "2026100206r", "2026100207"}, true},
		{"a re-run of another hour does not", []string{"2026100205", "2026100205-r2", "2026100207"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := batches.New(hourly{c}, time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC))
			for _, id := range tt.batches {
				add(s, delivered("p", "2026-10-02", id))
			}
			for _, d := range s.Diagnose(nil) {
				if d.BatchID == "2026100207" && hasKind(d, replay.ContinuityGap) != tt.wantGap {
					t.Errorf("continuity_gap = %v, want %v (%v)", !tt.wantGap, tt.wantGap, kinds(d))
				}
			}
		})
	}
}

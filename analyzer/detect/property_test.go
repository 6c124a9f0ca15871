package detect_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

func findingsJSON(fs []detect.Finding) []byte {
	var b []byte
	for i := range fs {
		b = fs[i].AppendJSON(b)
		b = append(b, '\n')
	}
	return b
}

// TestDetectEqualsDiagnose is the equivalence of diagnose and detect: a
// generated history is played once in time order and once shuffled
// between advances, with redeliveries and early events, at the same safe
// times. Both runs publish the same findings, byte for byte; and at the
// end every batch the detector still holds has the diagnosis that
// batches.Set (what `handoff diagnose` runs) gives on the same events as of
// the same time, and every batch it closed is delivered there.
func TestDetectEqualsDiagnose(t *testing.T) {
	contracts := seedContracts(t)
	const days = 12
	seen := map[detect.Kind]int{}
	defer func() {
		// Across the seeds, the runs must exercise the calendar, deadlines,
		// failures and anomalies, or the comparison proves little.
		for _, k := range []detect.Kind{detect.Missing, detect.Overdue, detect.Failed, "row_mismatch", "duplicate_consumption"} {
			if seen[k] == 0 {
				t.Errorf("no %s finding in any run (kinds %v)", k, seen)
			}
		}
	}()
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			events := genHistory(rand.New(rand.NewPCG(seed, 1)), days)
			ordered := newPlayer(mustNew(t, detect.Config{Contracts: contracts, From: genFrom}), events, nil)
			shuffled := newPlayer(mustNew(t, detect.Config{Contracts: contracts, From: genFrom}), events, rand.New(rand.NewPCG(seed, 2)))
			ts := steps(days)
			for _, safe := range ts {
				ordered.step(safe)
				shuffled.step(safe)
			}
			for _, f := range ordered.findings {
				seen[f.Kind]++
			}
			if len(ordered.findings) == 0 {
				t.Fatal("no findings at all: the generator exercises nothing")
			}
			if a, b := findingsJSON(ordered.findings), findingsJSON(shuffled.findings); !bytes.Equal(a, b) {
				t.Fatalf("order and redelivery changed the findings:\nin order %d records\nshuffled %d records\n%s", len(ordered.findings), len(shuffled.findings), firstDiff(a, b))
			}
			end := ts[len(ts)-1]
			set := batches.New(contracts, end)
			for i := range events {
				set.Add(&events[i])
			}
			open := 0
			for _, want := range set.Diagnose(nil) {
				k, err := model.ParseBatchKey(want.Batch)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range []*player{ordered, shuffled} {
					got, ok := p.d.Diagnosis(k)
					if !ok {
						if !want.Delivered() || want.Status != "delivered" {
							t.Errorf("%s: the detector closed it but diagnose says %s/%s", k, want.Status, want.Verdict)
						}
						continue
					}
					open++
					if a, b := want.AppendJSON(nil), got.AppendJSON(nil); !bytes.Equal(a, b) {
						t.Errorf("%s: detector and diagnose disagree:\n%s", k, firstDiff(a, b))
					}
				}
			}
			if open == 0 {
				t.Error("no batch left open: the comparison of diagnoses compared nothing")
			}
		})
	}
}

// firstDiff shows where two outputs part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-300)
	return fmt.Sprintf("at byte %d:\n  %s\n  %s", i, a[lo:min(len(a), i+200)], b[lo:min(len(b), i+200)])
}

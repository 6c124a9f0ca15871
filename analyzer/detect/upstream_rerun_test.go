package detect_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// seedWithRiskReport is the seed's contract and the risk report that waits
// for it (deploy/contracts/incident), loaded together.
func seedWithRiskReport(t *testing.T) *contract.Set {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, path := range map[string]string{
		"c/" + seedPipeline + ".yaml": "../../deploy/contracts/" + seedPipeline + ".yaml",
		"c/risk-report.daily.yaml":    "../../deploy/contracts/incident/risk-report.daily.yaml",
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: b}
	}
	set, err := contract.LoadFS(fsys, "c")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// riskDelivered is a delivered risk-report batch of date, its events two
// minutes apart from start.
func riskDelivered(date string, start time.Time) []model.Event {
	batch := strings.ReplaceAll(date, "-", "")
	es := absDelivered(date, batch, start)
	for i := range es {
		es[i].ID = "risk-" + es[i].ID
		es[i].Pipeline = "risk-report.daily"
		if es[i].Object != "" {
			es[i].Object = strings.Replace(es[i].Object, "account_balance_snapshot_", "risk_report_", 1)
		}
	}
	return es
}

// TestUpstreamRerunSameEverywhere: the upstream rule judges the
// snapshot's date by the attempt that speaks for it. A failed run that a
// re-run delivered blocks nothing downstream; a re-run that failed again
// is the root. diagnose (batches.Set) and the detector say the same of
// the risk report's batch.
func TestUpstreamRerunSameEverywhere(t *testing.T) {
	day := func(s string) time.Time { return at(s) }
	snap29 := absDelivered("2026-09-29", "20260929", day("2026-09-29T17:00:00Z"))
	risk29 := riskDelivered("2026-09-29", day("2026-09-29T23:30:00Z"))
	failed := []model.Event{
		absEvent("20260930-01", "2026-09-30", "20260930", model.JobStarted, day("2026-09-30T17:00:00Z")),
		absEvent("20260930-02", "2026-09-30", "20260930", model.JobFailed, day("2026-09-30T17:10:00Z")),
	}
	r1 := absDelivered("2026-09-30", "20260930-r1", day("2026-09-30T18:30:00Z"))
	r1failed := []model.Event{
		absEvent("20260930-r1-01", "2026-09-30", "20260930-r1", model.JobStarted, day("2026-09-30T18:30:00Z")),
		absEvent("20260930-r1-02", "2026-09-30", "20260930-r1", model.JobFailed, day("2026-09-30T18:40:00Z")),
	}
	// The risk report of 2026-09-30 started and stopped before it produced.
	risk30 := riskDelivered("2026-09-30", day("2026-09-30T23:30:00Z"))[:1]
	riskKey := model.BatchKey{Pipeline: "risk-report.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	tests := []struct {
		name   string
		events [][]model.Event
		root   string // the risk report's root ("" when not blocked)
	}{
		{"the re-run delivered: not blocked", [][]model.Event{snap29, risk29, failed, r1, risk30}, ""},
		{"the re-run failed again: it is the root", [][]model.Event{snap29, risk29, failed, r1failed, risk30}, seedPipeline + "/2026-09-30/20260930-r1"},
		{"no re-run: the failed run is the root", [][]model.Event{snap29, risk29, failed, risk30}, seedPipeline + "/2026-09-30/20260930"},
	}
	asOf := day("2026-10-01T03:00:00Z") // past the risk report's produced deadline (00:00Z)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all []model.Event
			for _, es := range tt.events {
				all = append(all, es...)
			}
			contracts := seedWithRiskReport(t)
			set := batches.New(contracts, asOf)
			set.Upstreams(nil) // the set holds both pipelines, as diagnose of a file does
			for i := range all {
				set.Add(&all[i])
			}
			want, ok := set.DiagnoseOne(riskKey)
			if !ok {
				t.Fatalf("diagnose has no batch %s", riskKey)
			}
			root := ""
			if want.Blocked != nil {
				var roots []string
				for _, r := range want.Blocked.Roots {
					roots = append(roots, r.Batch)
				}
				root = strings.Join(roots, ",")
			}
			if root != tt.root {
				t.Errorf("diagnose: %s blocked with roots %q, want %q", riskKey, root, tt.root)
			}
			d := mustNew(t, detect.Config{Contracts: contracts, From: model.MustParseDate("2026-09-29")})
			s := newStream(d, all)
			s.run(day("2026-09-29T00:00:00Z"), asOf, 10*time.Minute, 0)
			got, open := d.Diagnosis(riskKey)
			if !open {
				t.Fatalf("the detector closed %s, which is not delivered", riskKey)
			}
			if g, w := got.AppendJSON(nil), want.AppendJSON(nil); !bytes.Equal(g, w) {
				t.Errorf("%s: detector and diagnose disagree:\n detect   %s\n diagnose %s", riskKey, g, w)
			}
		})
	}
}

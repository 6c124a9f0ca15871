package detect_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestSeedCase streams the seed case through the detector as a topic would
// deliver it, every 15 minutes of safe time with a 30-second lag, from the
// first business date to midday after the stalled batch's deadlines: the
// 2026-09-30 batch raises signal_delivered overdue with verdict
// not_identified at its deadline, 2026-09-29 raises nothing, and the JSON
// records equal testdata/seed-findings.jsonl.
func TestSeedCase(t *testing.T) {
	d := mustNew(t, detect.Config{Contracts: seedContracts(t), From: model.MustParseDate("2026-09-29")})
	s := newStream(d, seedEvents(t))
	fs := s.run(at("2026-09-29T00:00:00Z"), at("2026-10-01T12:00:00Z"), 15*time.Minute, 30*time.Second)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(fs), summarize(fs))
	}
	f := fs[0]
	if f.Batch.String() != seedPipeline+"/2026-09-30/20260930" || f.Kind != detect.Overdue || f.Name != "signal_delivered" || f.State != detect.Open {
		t.Errorf("finding %+v, want signal_delivered overdue, open, for 2026-09-30", summarize(fs))
	}
	if f.Verdict != "not_identified" || f.Status != replay.StatusLate || f.Diagnosis.Verdict != model.NotIdentified {
		t.Errorf("verdict %s status %s, want not_identified, late", f.Verdict, f.Status)
	}
	// signal_delivered is due business_date + 1d 06:00 Asia/Shanghai =
	// 2026-09-30T22:00Z; the first 15-minute step past it is 22:15.
	if want := at("2026-09-30T22:00:00Z"); !f.Deadline.Equal(want) {
		t.Errorf("deadline %s, want %s", f.Deadline, want)
	}
	if want := at("2026-09-30T22:15:00Z"); !f.EvidenceAsOf.Equal(want) || !f.RaisedAt.Equal(want.Add(30*time.Second)) {
		t.Errorf("evidence_as_of %s raised_at %s, want %s and 30s later", f.EvidenceAsOf, f.RaisedAt, want)
	}
	if f.Lateness != 15*time.Minute {
		t.Errorf("lateness %s, want 15m (evidence time - deadline)", f.Lateness)
	}
	if f.Fingerprint != detect.Fingerprint(f.Batch, detect.Overdue, "signal_delivered") {
		t.Errorf("fingerprint %s is not Fingerprint(batch, overdue, signal_delivered)", f.Fingerprint)
	}
	var b []byte
	for i := range fs {
		b = fs[i].AppendJSON(b)
		b = append(b, '\n')
	}
	compareGolden(t, "testdata/seed-findings.jsonl", b)
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./analyzer/detect -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file (go test -run %s -update rewrites it)\nwant %s\n got %s", path, t.Name(), want, got)
	}
}

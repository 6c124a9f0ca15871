package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/schema"
)

// writeGraph writes a generated graph's contracts and the given lines to
// a temporary directory and loads the contracts.
func writeGraph(t *testing.T, g *gen.Graph, lines []string) (string, *contract.Set) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "contracts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range g.Contracts {
		if err := os.WriteFile(filepath.Join(dir, "contracts", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := contract.LoadFS(os.DirFS(dir), "contracts")
	if err != nil {
		t.Fatal(err)
	}
	return path, set
}

func graphCase(t *testing.T) *gen.Graph {
	t.Helper()
	g, err := gen.GenerateGraph(gen.GraphOptions{Pipelines: 60, Levels: 4, Days: 3, Date: time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC), Seed: 19})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Blocked) < 10 {
		t.Fatalf("the graph blocks %d batches: want a blast radius worth the name", len(g.Blocked))
	}
	return g
}

// rootsOf lists the roots a diagnosis JSON names ("" when not blocked).
func rootsOf(t *testing.T, j []byte) string {
	t.Helper()
	var d replay.Diagnosis
	if err := json.Unmarshal(j, &d); err != nil {
		t.Fatal(err)
	}
	if d.Blocked == nil {
		return ""
	}
	var rs []string
	for _, r := range d.Blocked.Roots {
		rs = append(rs, r.Batch)
	}
	return strings.Join(rs, ",")
}

// TestIncidentSameCauseEverywhere: the generated graph of 60 pipelines in
// 4 levels with three root breaks on one date, through diagnose (a file),
// backfill (what ingest stored in ClickHouse) and the detector (the
// events topic): every batch of the break date has the same diagnosis,
// blocked cause and roots included, on all three; the findings stored are
// three of the roots' own and the rest blocked, each naming its root.
func TestIncidentSameCauseEverywhere(t *testing.T) {
	testenv.Integration(t)
	g := graphCase(t)
	path, contracts := writeGraph(t, g, g.Events)
	now := g.SeenAt

	e := newEnvParts(t, 3)
	e.contracts = contracts
	e.cfg.ExpectFrom = "2026-09-28"
	e.cfg.Heartbeat = 0
	e.publishFile(t, path, 19)
	d := e.startDetector(t, now)
	d.caughtUp(t, now)
	_, _, published := d.r.Progress()
	testenv.Eventually(t, 2*time.Minute, "the published findings stored", func() (bool, string) {
		_, rows := e.findingKinds(t)
		return int64(rows) == published, fmt.Sprintf("%d stored, %d published", rows, published)
	})
	d.stop()
	det := d.r.Detector()

	want := diagnoseFile(t, path, contracts, now)
	testenv.Eventually(t, 2*time.Minute, "ingest has stored every event", func() (bool, string) {
		n := testenv.Uncommitted(t, e.brokers, e.cfg.IngestGroup, e.cfg.Kafka.Topic)
		return n == 0, fmt.Sprintf("%d events not committed by ingest", n)
	})
	bf := backfillAll(t, e, contracts, time.Date(2026, 9, 28, 0, 0, 0, 0, time.UTC), time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC), now)
	date := model.Date{Year: 2026, Month: 9, Day: 30}
	checked := 0
	for k, w := range want {
		if k.BusinessDate != date {
			continue
		}
		checked++
		wantRoots := strings.Join(g.Blocked[k.String()], ",")
		if got := rootsOf(t, w); got != wantRoots {
			t.Errorf("%s: diagnose names roots %q, want %q", k, got, wantRoots)
		}
		if b := bf[k]; !bytes.Equal(b, w) {
			t.Errorf("%s: backfill and diagnose disagree:\n%s", k, firstDiff(b, w))
		}
		if dd, ok := det.Diagnosis(k); ok {
			if j := dd.AppendJSON(nil); !bytes.Equal(j, w) {
				t.Errorf("%s: detector and diagnose disagree:\n%s", k, firstDiff(j, w))
			}
		} else if wantRoots != "" || g.Roots[k.String()] != "" {
			t.Errorf("%s: the detector closed it, yet it is broken or blocked", k)
		}
	}
	if checked != len(g.Pipelines) {
		t.Errorf("diagnose gave %d batches of %s, want one per pipeline (%d)", checked, date, len(g.Pipelines))
	}

	// The stored findings: each root's own (its incident), the others
	// blocked under their first root's incident.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := e.conn.Query(ctx, "SELECT batch, kind, argMax(root, seq) FROM "+e.db+"."+schema.Findings+" GROUP BY batch, kind ORDER BY batch")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var own []string
	blocked := 0
	for rows.Next() {
		var batch, kind, root string
		if err := rows.Scan(&batch, &kind, &root); err != nil {
			t.Fatal(err)
		}
		k, _ := model.ParseBatchKey(batch)
		if rs, ok := g.Blocked[batch]; ok {
			rk, _ := model.ParseBatchKey(rs[0])
			if root != detect.RootFingerprint(rk) {
				t.Errorf("finding %s of %s: root %q, want the incident of %s", kind, batch, root, rs[0])
			}
			blocked++
			continue
		}
		if root != detect.RootFingerprint(k) {
			t.Errorf("finding %s of %s: root %q, want its own incident", kind, batch, root)
		}
		own = append(own, batch+" "+kind)
	}
	var wantOwn []string
	for k, kind := range g.Roots {
		wantOwn = append(wantOwn, k+" "+map[string]string{gen.RootMissing: "missing", gen.RootStopped: "overdue", gen.RootFailed: "failed"}[kind])
	}
	slices.Sort(wantOwn)
	if strings.Join(own, "; ") != strings.Join(wantOwn, "; ") {
		t.Errorf("findings not blocked: %v, want the roots' own: %v", own, wantOwn)
	}
	if blocked != len(g.Blocked) {
		t.Errorf("%d blocked findings stored, want one per blocked batch (%d)", blocked, len(g.Blocked))
	}
	t.Logf("%d batches of %s: %d blocked under 3 roots, same cause on diagnose, backfill and detect", checked, date, len(g.Blocked))
}

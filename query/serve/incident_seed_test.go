package serve_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/serve"
	"github.com/handoff-dev/handoff/store/storetest"
)

// riskBatch is the seed's downstream batch of 2026-09-30
// (deploy/contracts/incident, docs/incidents.md).
const riskBatch = "risk-report.daily/2026-09-30/20260930"

// newSeedIncident loads the seed case extended by the risk report
// (docs/incidents.md, "The seed case, one link further") into a fresh
// database and serves it with the seed's contracts and the risk report's,
// as docs/incidents.md loads them, at the seed's as-of time.
func newSeedIncident(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../deploy/contracts")); err != nil {
		t.Fatal(err)
	}
	rr, err := os.ReadFile("../../deploy/contracts/incident/risk-report.daily.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "risk-report.daily.yaml"), rr, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := contract.LoadFS(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	tdb := storetest.NewDB(t, "serve_seed_incident")
	raw, db := tdb.Conn, tdb.Name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var events []model.Event
	for _, name := range []string{"../../deploy/demo/seed-case.jsonl", "../../deploy/contracts/incident/risk-report.jsonl"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = jsonl.Read(ctx, f, jsonl.Options{}, func(line int, e *model.Event, err error) error {
			if err != nil {
				t.Fatalf("%s line %d: %v", name, line, err)
			}
			events = append(events, *e)
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	w := tdb.Sink
	if err := w.Events(ctx, events); err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(context.Background(), raw, serve.Options{Database: db, Contracts: set, QueryTimeout: 20 * time.Second,
		Now: func() time.Time { return asOf }})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{raw: raw, db: db, srv: srv, http: newHTTP(t, srv)}
}

// TestSeedIncident: the seed's snapshot of 2026-09-30 is the root of an
// incident blocking the risk report of the same date, as docs/incidents.md
// shows it; the risk report's page links the incident, its own incident
// page points back to the snapshot's.
func TestSeedIncident(t *testing.T) {
	f := newSeedIncident(t)
	var inc incidentJSON
	f.getJSON(t, "/api/v1/incidents/"+seedBatch, 200, &inc)
	if inc.State != "open" || inc.Root.FirstMissing != "signal_delivered" || inc.Blocked != 1 || len(inc.Tree) != 1 || inc.Tree[0].Batch != riskBatch {
		t.Fatalf("the seed incident: state %q, root stopped at %q, %d blocked, tree %+v; want open, signal_delivered, %s", inc.State, inc.Root.FirstMissing, inc.Blocked, inc.Tree, riskBatch)
	}
	if len(inc.Chain.Nodes) != 2 || !inc.Chain.Nodes[0].Broken || inc.Chain.Nodes[1].State != "blocked" || inc.Chain.Nodes[1].Level != 1 {
		t.Errorf("the seed incident's chain %+v: want the snapshot broken at level 0, the risk report blocked at level 1", inc.Chain.Nodes)
	}
	want := seedBatch + " is not delivered (it stopped at signal_delivered, not_identified) and blocks 1 downstream batch."
	if inc.Summary != want {
		t.Errorf("summary %q, want %q", inc.Summary, want)
	}
	_, page := f.get(t, "/batches/"+riskBatch)
	if !bytes.Contains(page, []byte(`<a class="incident" href="/incidents/`+seedBatch+`">part of incident `+seedBatch+`</a>`)) {
		t.Errorf("the risk report's page does not link the seed's incident")
	}
	f.getJSON(t, "/api/v1/incidents/"+riskBatch, 200, &inc)
	if inc.State != "not_root" || len(inc.Roots) != 1 || inc.Roots[0].URL != "/incidents/"+seedBatch {
		t.Errorf("the risk report's incident: state %q, roots %+v; want not_root pointing to %s", inc.State, inc.Roots, seedBatch)
	}
}

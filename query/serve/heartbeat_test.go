package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/diagnose"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// TestHeartbeatsAsDiagnose: the pages read only each process's heartbeat
// that counts (history.Store.LatestHeartbeatPerProcess), where `handoff
// diagnose` reads every row at each process's latest time; with processes
// whose latest heartbeats tie in time, copies not merged yet, and a
// heartbeat after the as-of time, a batch's diagnosis on read names the
// same heartbeats as the command's, and says the same.
func TestHeartbeatsAsDiagnose(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hb := func(id string, sys model.System, comp string, at time.Time) model.Event {
		return model.Event{Spec: model.SpecV1, ID: id, Type: model.ProcessHeartbeat, Time: at, Pipeline: seedPipeline, System: sys, Component: comp}
	}
	tie := time.Date(2026, 10, 2, 6, 0, 0, 0, time.UTC)
	hbs := []model.Event{
		hb("hb-tie-a", model.Consumer, "consume-runner-1", tie), hb("hb-tie-c", model.Consumer, "consume-runner-1", tie),
		hb("hb-tie-b", model.Consumer, "consume-runner-1", tie), hb("hb-early", model.Consumer, "consume-runner-1", tie.Add(-time.Hour)),
		hb("hb-x-2", model.Exchange, "mover-1", tie.Add(-2*time.Hour)), hb("hb-x-1", model.Exchange, "mover-1", tie.Add(-2*time.Hour)),
		hb("hb-late", model.Producer, "etl-1", asOf.Add(time.Minute)), // after the as-of time: neither counts it
	}
	w := f.sink
	for range 2 { // copies, not merged yet
		if err := w.Events(ctx, hbs); err != nil {
			t.Fatal(err)
		}
	}
	contracts, err := contract.LoadFS(os.DirFS("../../deploy"), "contracts")
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range []string{seedBatch, seedPipeline + "/2026-10-01/20261001"} {
		var out, errs bytes.Buffer
		c := diagnose.Command{Source: diagnose.SourceConfig{ClickHouse: &chconfig.Service{Addr: testenv.ClickHouseAddr(t), Database: f.db, User: "default"}},
			Batch: batch, Contracts: contracts, AsOf: asOf, Format: "json"}
		if _, msg := exitcode.Of(c.Run(ctx, nil, &out, &errs)); msg != nil {
			t.Fatalf("handoff diagnose %s: %v\n%s", batch, msg, errs.String())
		}
		var want []replay.Diagnosis
		if err := json.Unmarshal(out.Bytes(), &want); err != nil || len(want) != 1 {
			t.Fatalf("handoff diagnose %s: %v, %d diagnoses", batch, err, len(want))
		}
		var api struct {
			Source    string           `json:"source"`
			Diagnosis replay.Diagnosis `json:"diagnosis"`
		}
		f.getJSON(t, "/api/v1/batches/"+batch, 200, &api)
		got := api.Diagnosis
		if api.Source != "on_read" {
			t.Fatalf("%s: source %q, want on_read", batch, api.Source)
		}
		alive := func(hs []replay.Heartbeat) string {
			b, _ := json.Marshal(hs)
			return string(b)
		}
		if alive(got.Alive) != alive(want[0].Alive) {
			t.Errorf("%s: serve's alive %s\nhandoff diagnose's %s", batch, alive(got.Alive), alive(want[0].Alive))
		}
		if len(got.Alive) != 2 || got.Alive[0].EventID != "hb-tie-c" || got.Alive[1].EventID != "hb-x-2" {
			t.Errorf("%s: alive %s, want consume-runner-1's hb-tie-c (the tie's greatest id) and mover-1's hb-x-2", batch, alive(got.Alive))
		}
		if got.Status != want[0].Status || got.Verdict != want[0].Verdict || got.FirstMissing != want[0].FirstMissing || got.NextStep.Action != want[0].NextStep.Action ||
			got.NextStep.Summary != want[0].NextStep.Summary {
			t.Errorf("%s: serve says %s/%s/%s, %s %q; handoff diagnose %s/%s/%s, %s %q", batch, got.Status, got.Verdict, got.FirstMissing, got.NextStep.Action, got.NextStep.Summary,
				want[0].Status, want[0].Verdict, want[0].FirstMissing, want[0].NextStep.Action, want[0].NextStep.Summary)
		}
	}
}

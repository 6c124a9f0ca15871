package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/storetest"
)

// TestDiagnoseFromClickHouseEqualsFromFile stores events in a real
// ClickHouse (each twice, as an at-least-once ingester may) and checks that
// diagnosing them from ClickHouse gives, batch for batch, the same JSON as
// diagnosing the same events from a file.
func TestDiagnoseFromClickHouseEqualsFromFile(t *testing.T) {
	clearEnv(t)
	events := readSeed(t)
	events = append(events, testenv.Events(3000, "pipe-a.daily", 1)...)
	events = append(events, testenv.Events(2000, "pipe-b.daily", 2)...)
	file := writeEvents(t, events)
	addr, _, db := storeTwice(t, "handoff_diag", events)

	common := []string{"--format", "json", "--contract", "../../deploy/contracts", "--as-of", "2026-10-03T00:00:00Z"}
	code, out, errOut := runCmd(t, "", append([]string{"--events", file}, common...)...)
	if code > exitNotDelivered {
		t.Fatalf("diagnose --events: exit %d: %s", code, errOut)
	}
	fromFile := byPipeline(t, out)
	if len(fromFile) != 3 {
		t.Fatalf("file diagnoses cover %d pipelines, want 3", len(fromFile))
	}
	for pipeline, want := range fromFile {
		code, out, errOut := runCmd(t, "", append([]string{"--clickhouse-addr", addr, "--clickhouse-database", db, "--pipeline", pipeline}, common...)...)
		if code > exitNotDelivered {
			t.Fatalf("diagnose --clickhouse --pipeline %s: exit %d: %s", pipeline, code, errOut)
		}
		got := byPipeline(t, out)[pipeline]
		if len(got) != len(want) {
			t.Fatalf("pipeline %s: %d diagnoses from ClickHouse, %d from the file", pipeline, len(got), len(want))
		}
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("pipeline %s, diagnosis %d differs:\nfile:       %s\nclickhouse: %s", pipeline, i, want[i], got[i])
			}
		}
	}

	// One batch, read with the week before it for continuity: the seed's
	// 2026-09-30 batch still sees 2026-09-29 delivered.
	code, out, errOut = runCmd(t, "", append([]string{"--clickhouse-addr", addr, "--clickhouse-database", db, "--batch", seedBatch}, common...)...)
	if code != exitNotDelivered {
		t.Fatalf("diagnose --clickhouse --batch: exit %d, want %d: %s", code, exitNotDelivered, errOut)
	}
	ds := decodeDiags(t, out)
	if len(ds) != 1 || ds[0].Batch != seedBatch || ds[0].Verdict != "not_identified" || ds[0].Status != "late" || ds[0].FirstMissing != "signal_delivered" {
		t.Fatalf("seed batch from ClickHouse: %+v", ds)
	}

	// The expected batches that never sent an event are batches: a range
	// of them alone (the second with no event read at all, only the
	// context's heartbeat), and one by --batch.
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--pipeline", "account-balance-snapshot.daily", "--from", "2026-10-01", "--to", "2026-10-02"},
			[]string{"account-balance-snapshot.daily/2026-10-01/20261001", "account-balance-snapshot.daily/2026-10-02/20261002"}},
		{[]string{"--pipeline", "account-balance-snapshot.daily", "--from", "2026-10-02", "--to", "2026-10-02"}, []string{"account-balance-snapshot.daily/2026-10-02/20261002"}},
		{[]string{"--batch", "account-balance-snapshot.daily/2026-10-01/20261001"}, []string{"account-balance-snapshot.daily/2026-10-01/20261001"}},
	} {
		code, out, errOut = runCmd(t, "", append(append([]string{"--clickhouse", addr, "--database", db}, c.args...), common...)...)
		if code != exitNotDelivered {
			t.Fatalf("diagnose --clickhouse %v: exit %d, want %d: %s", c.args, code, exitNotDelivered, errOut)
		}
		ds := decodeDiags(t, out)
		var got []string
		for _, d := range ds {
			got = append(got, d.Batch)
			if d.Verdict != "not_produced" || d.FirstMissing != "produced" {
				t.Errorf("%v: %s verdict %s first missing %s, want an absent batch (not_produced, produced)", c.args, d.Batch, d.Verdict, d.FirstMissing)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("diagnose --clickhouse %v: batches %v, want %v", c.args, got, c.want)
		}
	}
}

func readSeed(t *testing.T) []model.Event {
	t.Helper()
	f, err := os.Open("../../deploy/demo/seed-case.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []model.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		e, err := model.Decode(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// byPipeline splits a JSON array of diagnoses by pipeline, keeping each
// diagnosis' raw bytes (in output order, which is batch-key order).
func byPipeline(t *testing.T, out string) map[string][]json.RawMessage {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("not a JSON array: %v", err)
	}
	m := map[string][]json.RawMessage{}
	for _, r := range raw {
		var d struct {
			Pipeline string `json:"pipeline"`
		}
		if err := json.Unmarshal(r, &d); err != nil {
			t.Fatal(err)
		}
		m[d.Pipeline] = append(m[d.Pipeline], r)
	}
	return m
}

// TestDiagnoseFromClickHouseManyPartitions stores a few hundred valid
// events whose business dates are a month apart (1971..2015: one partition
// each) next to a normal pipeline. Reads must not depend on FINAL, whose
// per-partition merge ran out of ClickHouse's memory limit on every
// pipeline: diagnosing the normal pipeline from
// ClickHouse must succeed and equal the diagnosis of the same events from a
// file, and the spread pipeline must read back whole.
func TestDiagnoseFromClickHouseManyPartitions(t *testing.T) {
	clearEnv(t)
	normal := testenv.Events(100, "normal.daily", 3)
	var spread []model.Event
	for i := range 536 {
		m := time.Date(1971, time.Month(1+i), 1, 0, 0, 0, 0, time.UTC)
		d := model.Date{Year: m.Year(), Month: m.Month(), Day: 1}
		spread = append(spread, model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("spread-%04d", i), Type: model.JobSucceeded,
			Time: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Pipeline: "spread.monthly", BusinessDate: d, BatchID: d.Compact(), System: model.Producer})
	}
	addr, conn, db := storeTwice(t, "handoff_parts", append(spread, normal...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var parts uint64
	if err := conn.QueryRow(ctx, "SELECT uniqExact(partition) FROM system.parts WHERE database = ? AND table = 'events' AND active", db).Scan(&parts); err != nil {
		t.Fatal(err)
	}
	if parts < 537 {
		t.Fatalf("%d partitions, want at least 537: the test no longer reproduces the spread", parts)
	}

	file := writeEvents(t, normal)
	common := []string{"--format", "json", "--as-of", "2026-10-03T00:00:00Z"}
	code, want, errOut := runCmd(t, "", append([]string{"--events", file}, common...)...)
	if code > exitNotDelivered {
		t.Fatalf("diagnose --events: exit %d: %s", code, errOut)
	}
	code, got, errOut := runCmd(t, "", append([]string{"--clickhouse-addr", addr, "--clickhouse-database", db, "--pipeline", "normal.daily"}, common...)...)
	if code > exitNotDelivered {
		t.Fatalf("diagnose --clickhouse --pipeline normal.daily: exit %d: %s", code, errOut)
	}
	if got != want {
		t.Fatalf("ClickHouse diagnosis differs from the file's:\nfile:\n%s\nclickhouse:\n%s", want, got)
	}
	code, got, errOut = runCmd(t, "", append([]string{"--clickhouse-addr", addr, "--clickhouse-database", db, "--pipeline", "spread.monthly"}, common...)...)
	if code > exitNotDelivered {
		t.Fatalf("diagnose --clickhouse --pipeline spread.monthly: exit %d: %s", code, errOut)
	}
	if n := len(decodeDiags(t, got)); n != 536 {
		t.Fatalf("spread.monthly: %d diagnoses, want 536", n)
	}
}

// storeTwice stores events in a new database of the test ClickHouse, twice
// in separate INSERTs: the copies sit in separate parts, as an
// at-least-once ingester leaves them before merges. It returns the
// server's address, a connection and the database.
func storeTwice(t *testing.T, prefix string, events []model.Event) (string, driver.Conn, string) {
	t.Helper()
	addr := testenv.ClickHouseAddr(t)
	d := storetest.NewDB(t, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range 2 {
		if err := d.Sink.Events(ctx, events); err != nil {
			t.Fatal(err)
		}
	}
	return addr, d.Conn, d.Name
}

// writeEvents writes events as JSON lines to a temporary file.
func writeEvents(t *testing.T, events []model.Event) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "events.jsonl")
	var buf []byte
	for i := range events {
		buf = events[i].AppendJSON(buf)
		buf = append(buf, '\n')
	}
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestDiagnoseRangeEqualsBackfill stores the backfill's generated history
// in the real ClickHouse and checks that `diagnose --clickhouse --pipeline
// P --from D --to T` gives, byte for byte, the diagnoses `backfill --from D
// --to T --pipeline P` gives, the first batch of the range above all
// (whose previous batch lies before D: diagnose must read the context
// backfill reads), and that `diagnose --clickhouse --batch` gives that
// first batch's diagnosis too.
func TestDiagnoseRangeEqualsBackfill(t *testing.T) {
	testenv.Integration(t)
	clearEnv(t)
	t.Setenv("HANDOFF_KAFKA_BROKERS", "")
	contracts := backfillContracts(t)
	addr, _, db := storeTwice(t, "handoff_diag_range", genBackfillHistory(t))
	common := []string{"--contract", contracts, "--as-of", seedAsOf, "--format", "json"}
	checked := 0
	for _, tt := range []struct{ pipeline, from, to string }{
		{"account-balance-snapshot.daily", "2026-09-10", "2026-09-20"},
		{"account-balance-snapshot.daily", "2026-09-30", "2026-09-30"},
		{"w.weekdays", "2026-09-14", "2026-09-18"}, // a Monday: the previous batch is Friday's
		{"w.weekdays", "2026-09-17", "2026-09-17"}, // after the holiday of the 16th
		{"h.hourly", "2026-09-05", "2026-09-06"},   // the first hour's previous batch is the day before's last
		{"x.nocontract", "2026-09-05", "2026-09-09"},
	} {
		t.Run(tt.pipeline+"/"+tt.from, func(t *testing.T) {
			code, out, errOut := runBackfillCmd(t, append([]string{"--clickhouse-addr", addr, "--clickhouse-database", db,
				"--pipeline", tt.pipeline, "--from", tt.from, "--to", tt.to, "--dry-run"}, common...)...)
			if code != exitOK {
				t.Fatalf("backfill: exit %d: %s", code, errOut)
			}
			want := rawArray(t, out)
			if len(want) == 0 {
				t.Fatalf("backfill diagnosed no batch of %s in [%s, %s]: the history is too small to test anything", tt.pipeline, tt.from, tt.to)
			}
			code, out, errOut = runCmd(t, "", append([]string{"--clickhouse-addr", addr, "--clickhouse-database", db,
				"--pipeline", tt.pipeline, "--from", tt.from, "--to", tt.to}, common...)...)
			if code > exitNotDelivered {
				t.Fatalf("diagnose --clickhouse: exit %d: %s", code, errOut)
			}
			got := rawArray(t, out)
			if len(got) == 0 || !bytes.Equal(got[0], want[0]) {
				t.Fatalf("the first batch of the range differs:\nbackfill: %s\ndiagnose: %.3000s", want[0], out)
			}
			if len(got) != len(want) {
				t.Fatalf("diagnose: %d diagnoses, backfill: %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("diagnosis %d differs:\nbackfill: %s\ndiagnose: %s", i, want[i], got[i])
				}
			}
			var first struct {
				Batch    string          `json:"batch"`
				Previous json.RawMessage `json:"previous"`
			}
			if err := json.Unmarshal(want[0], &first); err != nil {
				t.Fatal(err)
			}
			if first.Previous != nil {
				checked++
			}
			code, out, errOut = runCmd(t, "", append([]string{"--clickhouse-addr", addr, "--clickhouse-database", db, "--batch", first.Batch}, common...)...)
			if code > exitNotDelivered {
				t.Fatalf("diagnose --clickhouse --batch %s: exit %d: %s", first.Batch, code, errOut)
			}
			if one := rawArray(t, out); len(one) != 1 || !bytes.Equal(one[0], want[0]) {
				t.Fatalf("diagnose --batch %s differs from backfill:\nbackfill: %s\ndiagnose: %s", first.Batch, want[0], out)
			}
		})
	}
	if checked < 4 {
		t.Errorf("only %d of the ranges' first batches check continuity: the test no longer covers the context read", checked)
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

func runContractsCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"contracts", "suggest"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestContractsSuggestFromClickHouse stores 30 days of six generated
// pipelines (daily, weekdays, hourly) in the real ClickHouse, each event
// twice, and checks that `contracts suggest` reads them back into
// contracts that load and name the generator's schedule and templates,
// the same as it suggests from the events file; and that --diff against
// the generator's own contracts names the deadlines, not the schedule.
func TestContractsSuggestFromClickHouse(t *testing.T) {
	clearEnv(t)
	var buf bytes.Buffer
	opts := gen.Options{Seed: 7, Pipelines: 6, Days: 30, End: time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC),
		Schedules: []gen.Schedule{gen.Daily, gen.Weekdays, gen.Hourly}}
	if _, err := gen.Write(&buf, opts); err != nil {
		t.Fatal(err)
	}
	var events []model.Event
	if _, err := jsonl.Read(context.Background(), bytes.NewReader(buf.Bytes()), jsonl.Options{}, func(_ int, e *model.Event, err error) error {
		if err == nil {
			events = append(events, *e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, _, db := storeTwice(t, "handoff_suggest", events)
	ch := []string{"--from", "2026-09-01", "--to", "2026-09-30", "--clickhouse-addr", addr, "--clickhouse-database", db}

	out := t.TempDir()
	if code, stdout, stderr := runContractsCmd(t, append(ch, "--out", out)...); code != exitOK {
		t.Fatalf("contracts suggest --out: exit %d: %s%s", code, stdout, stderr)
	}
	for i := range opts.Pipelines {
		s := opts.Schedule(i)
		name := gen.PipelineName(i, s)
		data, err := os.ReadFile(filepath.Join(out, name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := contract.Parse(name+".yaml", data)
		if err != nil {
			t.Fatalf("suggestion for %s does not load: %v\n%s", name, err, data)
		}
		wantID := "{yyyymmdd}"
		if s == gen.Hourly {
			wantID = "{yyyymmdd}{hh}"
		}
		if string(c.Schedule) != string(s) || c.BatchID.String() != wantID || !strings.HasSuffix(c.Artifact.String(), "_{batch_id}.csv") ||
			!strings.HasSuffix(c.Signal.String(), "_{batch_id}.flag") || c.Required != model.AllBoundaries || c.Deadlines[model.Consumed].Kind == contract.NoDeadline {
			t.Errorf("suggestion for %s (schedule %s):\n%s", name, s, data)
		}
	}

	_, fromCH, _ := runContractsCmd(t, ch...)
	code, fromFile, stderr := runContractsCmd(t, "--events", file, "--from", "2026-09-01", "--to", "2026-09-30")
	if code != exitOK || fromFile != fromCH {
		t.Errorf("from the file (exit %d, %s) the suggestions differ from ClickHouse's:\nfile:\n%s\nclickhouse:\n%s", code, stderr, fromFile, fromCH)
	}

	contracts := t.TempDir()
	if err := gen.WriteContracts(contracts, opts, opts.Pipelines); err != nil {
		t.Fatal(err)
	}
	code, diff, stderr := runContractsCmd(t, append(ch, "--diff", contracts, "--pipeline", "pipeline-00[01]*")...)
	if code != exitNotDelivered {
		t.Fatalf("--diff: exit %d, want %d (differences): %s%s", code, exitNotDelivered, diff, stderr)
	}
	if !strings.Contains(diff, "deadlines.produced: contract business_date + 1d 06:00, suggested business_date + 1d ") ||
		strings.Contains(diff, "schedule:") || strings.Contains(diff, "pipeline-002") || !strings.Contains(diff, "pipeline-001.weekdays") {
		t.Errorf("--diff:\n%s", diff)
	}
}

func TestContractsSuggestUsage(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "2026-09-01"}, "--from DATE and --to DATE are required"},
		{[]string{"--from", "2026-09-31", "--to", "2026-10-01"}, `--from "2026-09-31"`},
		{[]string{"--events", "x", "--pipeline", "a["}, `--pipeline "a["`},
		{[]string{"--events", "x", "--zone", "Mars/Olympus"}, "--zone"},
		{[]string{"--events", "x", "--out", "a", "--diff", "b"}, "exclusive"},
	} {
		code, _, stderr := runContractsCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

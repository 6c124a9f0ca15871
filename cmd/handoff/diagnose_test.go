package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/report"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

const (
	seedEvents    = "../../deploy/demo/seed-case.jsonl"
	seedContracts = "../../deploy/contracts"
	seedAsOf      = "2026-10-03T00:00:00Z"
	seedBatch     = "account-balance-snapshot.daily/2026-09-30/20260930"
	seedPrevBatch = "account-balance-snapshot.daily/2026-09-29/20260929"
)

// clearEnv makes the tests independent of the caller's HANDOFF_* variables.
func clearEnv(t *testing.T) {
	for _, k := range []string{"HANDOFF_EVENTS", "HANDOFF_CONTRACTS", "HANDOFF_AS_OF", "HANDOFF_FORMAT", "HANDOFF_CLICKHOUSE", "HANDOFF_TZ"} {
		t.Setenv(k, "")
	}
}

func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"diagnose"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

type diag struct {
	Batch        string `json:"batch"`
	Status       string `json:"status"`
	Verdict      string `json:"verdict"`
	FirstMissing string `json:"first_missing"`
	AsOf         string `json:"as_of"`
	Hypotheses   []struct {
		Name    string `json:"name"`
		Verdict string `json:"verdict"`
	} `json:"hypotheses"`
}

func decodeDiags(t *testing.T, s string) []diag {
	t.Helper()
	var ds []diag
	if err := json.Unmarshal([]byte(s), &ds); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, s)
	}
	return ds
}

func TestDiagnoseSeedCase(t *testing.T) {
	clearEnv(t)
	code, out, errs := runCmd(t, "", "--events", seedEvents, "--contract", seedContracts, "--as-of", seedAsOf, "--format", "json")
	if code != exitNotDelivered {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitNotDelivered, errs)
	}
	ds := decodeDiags(t, out)
	// The two batches with events, then the two the daily schedule expects
	// after them that sent no event (absent, as of 2026-10-03: missing).
	if len(ds) != 4 || ds[0].Batch != seedPrevBatch || ds[1].Batch != seedBatch {
		t.Fatalf("batches %+v, want %s, %s and the absent 2026-10-01 and 2026-10-02", ds, seedPrevBatch, seedBatch)
	}
	for _, d := range ds[2:] {
		if d.Verdict != "not_produced" || d.FirstMissing != "produced" {
			t.Errorf("%s: verdict %s first missing %s, want the absent expected batch (not_produced, produced)", d.Batch, d.Verdict, d.FirstMissing)
		}
	}
	if d := ds[0]; d.Status != "delivered" || d.Verdict != "delivered" {
		t.Errorf("%s: status %s verdict %s, want delivered", d.Batch, d.Status, d.Verdict)
	}
	if d := ds[1]; d.Verdict != "not_identified" || d.FirstMissing != "signal_delivered" || d.Status != "late" {
		t.Errorf("%s: verdict %s, first_missing %s, status %s; want not_identified, signal_delivered, late", d.Batch, d.Verdict, d.FirstMissing, d.Status)
	}
	if !strings.HasPrefix(ds[1].AsOf, "2026-10-03T00:00:00") {
		t.Errorf("as_of %s", ds[1].AsOf)
	}
	for _, want := range []string{"summary: 17 lines read, 17 events (1 heartbeat), 4 batches, 0 lines rejected", "delivered 1", "late 3"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestDiagnoseText(t *testing.T) {
	clearEnv(t)
	code, out, errs := runCmd(t, "", "--events", seedEvents, "--contract", seedContracts, "--as-of", seedAsOf)
	if code != exitNotDelivered {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	for _, want := range []string{seedPrevBatch, seedBatch, "not_identified", "signal_delivered"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
	if strings.Index(out, seedPrevBatch) > strings.Index(out, seedBatch) {
		t.Error("batches not in key order")
	}
}

func TestDiagnoseBatch(t *testing.T) {
	clearEnv(t)
	// The delivered batch alone: exit 0.
	code, out, errs := runCmd(t, "", "--events", seedEvents, "--contract", seedContracts, "--as-of", seedAsOf, "--format", "json", "--batch", seedPrevBatch)
	if code != exitOK {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, errs)
	}
	if ds := decodeDiags(t, out); len(ds) != 1 || ds[0].Batch != seedPrevBatch {
		t.Errorf("got %+v", ds)
	}
	// The broken one alone: exit 1, and continuity still sees its neighbour.
	code, out, _ = runCmd(t, "", "--events", seedEvents, "--contract", seedContracts, "--as-of", seedAsOf, "--format", "json", "--batch", seedBatch)
	if ds := decodeDiags(t, out); code != exitNotDelivered || len(ds) != 1 || ds[0].Verdict != "not_identified" {
		t.Errorf("exit %d, %+v", code, ds)
	}
	if strings.Contains(out, "continuity_gap") {
		t.Error("--batch lost the previous batch: continuity_gap reported")
	}
	// An unknown batch is an error naming it.
	unknown := "account-balance-snapshot.daily/2026-09-28/20260928"
	code, out, errs = runCmd(t, "", "--events", seedEvents, "--as-of", seedAsOf, "--batch", unknown)
	if code != exitUsage || !strings.Contains(errs, unknown) || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 naming %s", code, out, errs, unknown)
	}
}

// mixed is the seed case's delivered batch with bad lines among its events.
func mixed(t *testing.T) string {
	data, err := os.ReadFile(seedEvents)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")[:10] // 20260929 only
	bad := strings.Replace(lines[0], `"business_date":"2026-09-29"`, `"business_date":"2026-13-01"`, 1)
	bad = strings.Replace(bad, `"event_id":"abs-20260929-01"`, `"event_id":"bad-1"`, 1)
	out := append([]string{}, lines[:3]...)
	out = append(out, bad, "{oops", "")                                                  // lines 4, 5 and a blank 6
	out = append(out, lines[3:]...)                                                      // lines 7..13
	out = append(out, `{"spec":"handoff/v1","event_id":"x","type":"job.exploded"}`+"\r") // line 14, CRLF
	return strings.Join(out, "\n") + "\n"
}

func TestDiagnoseBadLines(t *testing.T) {
	clearEnv(t)
	input := mixed(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(file, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, "", "--events", file, "--as-of", seedAsOf, "--format", "json")
	if code != exitOK {
		t.Errorf("exit %d, want 0 (bad lines skipped, the batch delivered); stderr:\n%s", code, errs)
	}
	if ds := decodeDiags(t, out); len(ds) != 1 || ds[0].Status != "delivered" {
		t.Errorf("got %+v", ds)
	}
	for _, want := range []string{
		file + `:4: business_date "2026-13-01": month out of range`,
		file + ":5: not valid JSON",
		file + `:14: type "job.exploded": unknown event type`,
		"summary: 14 lines read, 10 events (0 heartbeats), 1 batch, 3 lines rejected (bad_json 1, bad_value 1, unknown_type 1)",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	// The same from standard input, named stdin.
	code, _, errs = runCmd(t, input, "--events", "-", "--as-of", seedAsOf, "--format", "json")
	if code != exitOK || !strings.Contains(errs, "stdin:4: business_date") {
		t.Errorf("stdin: exit %d, stderr:\n%s", code, errs)
	}
	// --strict: the first bad line is fatal.
	code, out, errs = runCmd(t, input, "--events", "-", "--as-of", seedAsOf, "--strict")
	if code != exitUsage || out != "" || !regexp.MustCompile(`stdin:4: business_date "2026-13-01": month out of range`).MatchString(errs) || strings.Contains(errs, "stdin:5") {
		t.Errorf("--strict: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
}

// TestDiagnoseGarbage feeds many bad lines: standard error shows the
// first few with their line numbers and reasons, then one line with the
// count of the rest, not one line per bad line.
func TestDiagnoseGarbage(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		name      string
		bad       int
		wantShown int
		wantMore  string
	}{
		{"under the cap", 3, 3, ""},
		{"at the cap", 10, 10, ""},
		{"over the cap", 5000, 10, "stdin: 4990 more rejected lines not shown"},
		{"one over", 11, 10, "stdin: 1 more rejected line not shown"},
	}
	seed, err := os.ReadFile(seedEvents)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in strings.Builder
			in.Write(seed)
			for i := range tt.bad {
				fmt.Fprintf(&in, "garbage %d \x01\xff{\n", i)
			}
			code, _, errs := runCmd(t, in.String(), "--events", "-", "--as-of", seedAsOf, "--format", "json")
			if code != exitNotDelivered {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitNotDelivered, errs)
			}
			shown := regexp.MustCompile(`(?m)^stdin:\d+: not valid JSON`).FindAllString(errs, -1)
			if len(shown) != tt.wantShown {
				t.Errorf("%d bad lines shown, want %d; stderr:\n%s", len(shown), tt.wantShown, errs)
			}
			if len(shown) > 0 && shown[0] != "stdin:18: not valid JSON" {
				t.Errorf("first bad line reported as %q, want line 18", shown[0])
			}
			if tt.wantMore != "" && !strings.Contains(errs, tt.wantMore) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantMore, errs)
			}
			if tt.wantMore == "" && strings.Contains(errs, "not shown") {
				t.Errorf("stderr says lines were hidden:\n%s", errs)
			}
			if n := strings.Count(errs, "\n"); n > 10+4 { // 10 bad lines, the count, the summary
				t.Errorf("stderr has %d lines for %d bad lines", n, tt.bad)
			}
			want := fmt.Sprintf("%d lines rejected (bad_json %d)", tt.bad, tt.bad)
			if !strings.Contains(errs, want) {
				t.Errorf("summary lacks %q:\n%s", want, errs)
			}
		})
	}
}

func TestDiagnoseEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("HANDOFF_EVENTS", seedEvents)
	t.Setenv("HANDOFF_CONTRACTS", seedContracts)
	t.Setenv("HANDOFF_AS_OF", seedAsOf)
	t.Setenv("HANDOFF_FORMAT", "text")
	// Flags win over the environment.
	code, out, errs := runCmd(t, "", "--format", "json")
	if code != exitNotDelivered {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	if ds := decodeDiags(t, out); len(ds) != 4 || ds[1].Status != "late" {
		t.Errorf("got %+v", ds)
	}
}

func TestDiagnoseUsage(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no events", nil, exitUsage, "--events"},
		{"bad format", []string{"--events", seedEvents, "--format", "xml"}, exitUsage, `--format "xml"`},
		{"bad as-of", []string{"--events", seedEvents, "--as-of", "yesterday"}, exitUsage, `--as-of "yesterday"`},
		{"bad batch key", []string{"--events", seedEvents, "--batch", "nope"}, exitUsage, "--batch"},
		{"unknown flag", []string{"--events", seedEvents, "--bogus"}, exitUsage, "bogus"},
		{"extra argument", []string{"--events", seedEvents, "more"}, exitUsage, "more"},
		{"missing file", []string{"--events", "does-not-exist.jsonl"}, exitUsage, "does-not-exist.jsonl"},
		{"missing contract", []string{"--events", seedEvents, "--contract", "no-such-dir"}, exitUsage, "no-such-dir"},
		{"clickhouse without a pipeline", []string{"--clickhouse-addr", "localhost:9000"}, exitUsage, "--pipeline"},
		{"pipeline without clickhouse", []string{"--events", "-", "--pipeline", "p"}, exitUsage, "--clickhouse-addr"},
		{"help", []string{"-h"}, exitOK, "--events"},
		// Checked before connecting: no server listens on port 9.
		{"hostile database", []string{"--clickhouse-addr", "127.0.0.1:9", "--pipeline", "p", "--clickhouse-database", "db.events FINAL WHERE 1=1 --"}, exitUsage, `--clickhouse-database (HANDOFF_CLICKHOUSE_DATABASE): clickhouse database name "db.events FINAL WHERE 1=1 --"`},
		{"hostile database with --batch", []string{"--clickhouse-addr", "127.0.0.1:9", "--batch", seedBatch, "--clickhouse-database", "h;DROP DATABASE h"}, exitUsage, "--clickhouse-database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCmd(t, "", tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", code, out, errs, tt.code, tt.want)
			}
		})
	}
}

func TestDiagnoseBadContract(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.yaml"), []byte("pipeline: x\nschedule: fortnightly\nrequired: [teleported]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCmd(t, "", "--events", seedEvents, "--contract", dir)
	if code != exitUsage || !strings.Contains(errs, "x.yaml") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}

func TestDiagnoseEmpty(t *testing.T) {
	clearEnv(t)
	code, out, errs := runCmd(t, "\n\n", "--events", "-", "--format", "json")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
}

// TestDiagnoseJSONMatchesReport checks that the streamed JSON is the bytes
// report.JSON writes, over many pipelines and batches.
func TestDiagnoseJSONMatchesReport(t *testing.T) {
	clearEnv(t)
	data, err := os.ReadFile(seedEvents)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range []string{"b.daily", "a.daily", "c.hourly"} {
		b.WriteString(strings.ReplaceAll(string(data), "account-balance-snapshot.daily", p))
	}
	code, streamed, errs := runCmd(t, b.String(), "--events", "-", "--as-of", seedAsOf, "--format", "json")
	if code != exitNotDelivered {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	ds := decodeDiags(t, streamed)
	if len(ds) != 6 || ds[0].Batch != "a.daily/2026-09-29/20260929" || ds[5].Batch != "c.hourly/2026-09-30/20260930" {
		t.Errorf("order: %+v", ds)
	}
	// One diagnosis per line.
	if n := strings.Count(streamed, "\n"); n != 6+2 {
		t.Errorf("%d lines, want 8", n)
	}
	// The bytes of report.JSON over a single batches.Set.
	asOf, _ := time.Parse(time.RFC3339, seedAsOf)
	set := batches.New((*contract.Set)(nil), asOf)
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		e, err := model.Decode([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		set.Add(&e)
	}
	var want bytes.Buffer
	if err := report.JSON(&want, set.Diagnose(nil)); err != nil {
		t.Fatal(err)
	}
	if streamed != want.String() {
		t.Errorf("streamed JSON differs from report.JSON:\n%s\nwant:\n%s", streamed, want.String())
	}
}

// failingWriter fails every write, as a full disk or a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

func TestDiagnoseWriteError(t *testing.T) {
	clearEnv(t)
	for _, format := range []string{"json", "text"} {
		var errb bytes.Buffer
		code := run(context.Background(), []string{"diagnose", "--events", seedEvents, "--as-of", seedAsOf, "--format", format},
			strings.NewReader(""), failingWriter{}, &errb)
		if code != exitFailure || !strings.Contains(errb.String(), "writing the diagnoses: no space left on device") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying the write failed", format, code, errb.String(), exitFailure)
		}
	}
}

// TestDiagnoseZone: the text shows the seed contract's zone beside UTC,
// --tz (or HANDOFF_TZ) shows the reader's instead, a bad zone is a usage
// error naming --tz, and JSON stays UTC whatever the zone.
func TestDiagnoseZone(t *testing.T) {
	clearEnv(t)
	args := []string{"--events", seedEvents, "--contract", seedContracts, "--as-of", seedAsOf, "--batch", seedBatch}
	for _, tc := range []struct {
		name, env string
		extra     []string
		want, not string
	}{
		{"contract zone", "", nil, "due 2026-09-30 22:00 UTC (06:00 Asia/Shanghai, next day)", "America/New_York"},
		{"--tz", "", []string{"--tz", "America/New_York"}, "due 2026-09-30 22:00 UTC (18:00 America/New_York)", "Asia/Shanghai"},
		{"HANDOFF_TZ", "UTC", nil, "due 2026-09-30 22:00 UTC;", "Asia/Shanghai"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HANDOFF_TZ", tc.env)
			code, out, errOut := runCmd(t, "", append(slices.Clone(args), tc.extra...)...)
			if code != exitNotDelivered {
				t.Fatalf("exit %d, want %d: %s", code, exitNotDelivered, errOut)
			}
			if !strings.Contains(out, tc.want) || strings.Contains(out, tc.not) {
				t.Errorf("want %q and no %q in:\n%s", tc.want, tc.not, out)
			}
		})
	}
	if code, _, errOut := runCmd(t, "", append(slices.Clone(args), "--tz", "Mars/Olympus")...); code != exitUsage || !strings.Contains(errOut, "--tz") {
		t.Errorf("--tz Mars/Olympus: exit %d, %q; want a usage error naming --tz", code, errOut)
	}
	code, out, _ := runCmd(t, "", append(slices.Clone(args), "--tz", "Asia/Tokyo", "--format", "json")...)
	if code != exitNotDelivered || strings.Contains(out, "Tokyo") || !strings.Contains(out, `"as_of":"2026-10-03T00:00:00.000Z"`) {
		t.Errorf("--format json --tz Asia/Tokyo: exit %d; want UTC times only:\n%s", code, out)
	}
}

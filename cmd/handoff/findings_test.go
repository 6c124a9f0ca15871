package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

// seedPipelineName is the seed case's pipeline.
const seedPipelineName = "account-balance-snapshot.daily"

// findingsCase stores the findings the command tests read: the demo's
// three (the seed batch overdue at signal_delivered, two expected batches
// missing), a finding of another pipeline resolved after it was opened,
// and an anomaly with no deadline. Every record is stored twice. It
// returns the arguments that point the command at them.
func findingsCase(t *testing.T) []string {
	t.Helper()
	d := storetest.NewDB(t, "handoff_findings")
	db := d.Name
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ms := func(s string) int64 {
		if s == "" {
			return 0
		}
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UnixMilli()
	}
	var rows schema.FindingRows
	for i, r := range []struct {
		pipeline, date               string
		kind                         detect.Kind
		name                         string
		seq                          uint32
		state, status, verdict, miss string
		raised, resolved, deadline   string
		lateness                     time.Duration
	}{
		{seedPipelineName, "2026-09-30", detect.Overdue, "signal_delivered", 1, "open", "late", "not_identified", "signal_delivered",
			"2026-10-03T00:00:00Z", "", "2026-09-30T22:00:00Z", 50 * time.Hour},
		{seedPipelineName, "2026-10-01", detect.Missing, "not_produced", 1, "open", "late", "not_produced", "produced",
			"2026-10-03T00:00:00Z", "", "2026-10-01T18:00:00Z", 30 * time.Hour},
		{seedPipelineName, "2026-10-02", detect.Missing, "not_produced", 1, "open", "late", "not_produced", "produced",
			"2026-10-03T00:00:00Z", "", "2026-10-02T18:00:00Z", 6 * time.Hour},
		{"finance.ledger.daily", "2026-09-29", detect.Overdue, "consumed", 2, "resolved", "delivered", "delivered", "",
			"2026-09-29T23:00:00Z", "2026-09-30T03:00:00Z", "2026-09-29T22:00:00Z", 5 * time.Hour},
		{"finance.ledger.daily", "2026-09-29", detect.Overdue, "consumed", 1, "open", "late", "not_consumed", "consumed",
			"2026-09-29T23:00:00Z", "", "2026-09-29T22:00:00Z", time.Hour},
		{"ops.audit.hourly", "2026-10-02", "row_mismatch", "", 1, "open", "broken", "delivered", "",
			"2026-10-02T09:30:00Z", "", "", 0},
	} {
		d := model.MustParseDate(r.date)
		k := model.BatchKey{Pipeline: r.pipeline, BusinessDate: d, BatchID: d.Compact()}
		rows.Add(schema.FindingRow{Key: k, Fingerprint: detect.Fingerprint(k, r.kind, r.name), Seq: r.seq, State: r.state,
			Kind: string(r.kind), Name: r.name, RaisedMS: ms(r.raised), ResolvedMS: ms(r.resolved), DeadlineMS: ms(r.deadline),
			LatenessMS: r.lateness.Milliseconds(), Severity: "warning", Owner: "finance-data", EvidenceAsOfMS: ms(r.raised),
			Status: r.status, Verdict: r.verdict, FirstMissing: r.miss, Diagnosis: "{}"},
			schema.Source{Topic: "handoff.findings", Offset: int64(i)}, 1)
	}
	for range 2 {
		if err := d.Sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"--clickhouse-addr", testenv.ClickHouseAddr(t), "--clickhouse-database", db, "--as-of", "2026-10-03T12:00:00Z"}
}

// runFindingsCmd runs `handoff findings` with args.
func runFindingsCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"findings"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestFindingsCommand reads stored findings back on the real ClickHouse:
// the text an analyst reads (golden), each finding once in its latest
// state, the filters, the JSON shapes, the limit, and the exit codes.
func TestFindingsCommand(t *testing.T) {
	base := findingsCase(t)
	text := func(args ...string) string {
		t.Helper()
		code, out, errOut := runFindingsCmd(append(slices.Clone(base), args...)...)
		if code != exitOK {
			t.Fatalf("findings %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	golden(t, "findings-open.txt", text())
	golden(t, "findings-all.txt", text("--state", "all"))
	// The contract's zone beside UTC (the seed's is Asia/Shanghai; the
	// other pipelines have no contract there: UTC alone), or the reader's.
	golden(t, "findings-all-zone.txt", text("--state", "all", "--contract", "../../deploy/contracts"))
	if out := text("--contract", "../../deploy/contracts", "--tz", "America/New_York"); !strings.Contains(out, "2026-09-30 22:00 UTC (18:00 America/New_York)") || strings.Contains(out, "Asia/Shanghai") {
		t.Errorf("findings --tz America/New_York: want New York times instead of the contract's zone:\n%s", out)
	}
	if code, _, errOut := runFindingsCmd(append(slices.Clone(base), "--tz", "Mars/Olympus")...); code != exitUsage || !strings.Contains(errOut, "--tz") {
		t.Errorf("findings --tz Mars/Olympus: exit %d, %q; want usage exit naming --tz", code, errOut)
	}

	for _, tt := range []struct {
		args []string
		last string // the summary line
		rows int
	}{
		{[]string{"--state", "resolved"}, "1 resolved finding, 1 pipeline", 1},
		{[]string{"--pipeline", "account-balance-*", "--kind", "missing"}, "2 open findings, 1 pipeline", 2},
		{[]string{"--pipeline", "ops.audit.hourly, finance.ledger.daily", "--state", "all"}, "2 findings (1 open, 1 resolved), 2 pipelines", 2},
		{[]string{"--pipeline", "ops.audit.hourly", "--pipeline", seedPipelineName, "--from", "2026-10-01", "--to", "2026-10-01"}, "1 open finding, 1 pipeline", 1},
		{[]string{"--kind", "failed"}, "no open findings", 0},
		{[]string{"--limit", "2"}, "2 open findings, 1 pipeline; more match: these are the first 2 (narrow the filters or raise the limit)", 2},
	} {
		lines := strings.Split(strings.TrimSuffix(text(tt.args...), "\n"), "\n")
		rows := len(lines) - 1
		if rows > 0 {
			rows-- // the header
		}
		if lines[len(lines)-1] != tt.last || rows != tt.rows {
			t.Errorf("findings %v: %d rows, summary %q; want %d rows, %q", tt.args, rows, lines[len(lines)-1], tt.rows, tt.last)
		}
	}

	// JSON: one object; each finding with the API's fields.
	code, out, errOut := runFindingsCmd(append(slices.Clone(base), "--format", "json", "--limit", "3")...)
	if code != exitOK || !strings.Contains(errOut, "more findings match than --limit 3") {
		t.Fatalf("findings --format json --limit 3: exit %d, stderr %q; want 0 and the truncation named", code, errOut)
	}
	var doc struct {
		Count     int               `json:"count"`
		Truncated bool              `json:"truncated"`
		Findings  []json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--format json: %v\n%s", err, out)
	}
	if doc.Count != 3 || !doc.Truncated || len(doc.Findings) != 3 {
		t.Fatalf("--format json --limit 3: count %d truncated %t, %d findings; want 3, true, 3", doc.Count, doc.Truncated, len(doc.Findings))
	}
	var first map[string]any
	if err := json.Unmarshal(doc.Findings[0], &first); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range first {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	wantKeys := []string{"batch", "batch_id", "business_date", "deadline", "evidence_as_of", "fingerprint", "first_missing", "kind",
		"lateness_as_of", "lateness_ms", "name", "owner", "pipeline", "raised_at", "seq", "severity", "state", "status", "verdict"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("a finding's JSON keys: %v\nwant %v", keys, wantKeys)
	}
	// Open: late as of --as-of (2026-10-03T12:00Z, 62h after the
	// deadline), as the text's LATE says (2d 14h 0m), not the recorded 50h.
	if first["batch"] != seedBatch || first["deadline"] != "2026-09-30T22:00:00.000Z" || first["lateness_ms"] != float64(62*3600*1000) ||
		first["lateness_as_of"] != "2026-10-03T12:00:00.000Z" {
		t.Errorf("first finding: %s; want the seed batch's, due 2026-09-30T22:00:00.000Z, 62h late as of 2026-10-03T12:00:00.000Z", doc.Findings[0])
	}

	// JSON lines: one finding per line, the resolved one in its latest
	// state.
	code, out, _ = runFindingsCmd(append(slices.Clone(base), "--format", "jsonl", "--state", "resolved")...)
	var f struct {
		State      string `json:"state"`
		Seq        int    `json:"seq"`
		ResolvedAt string `json:"resolved_at"`
	}
	if code != exitOK || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &f) != nil ||
		f.State != "resolved" || f.Seq != 2 || f.ResolvedAt != "2026-09-30T03:00:00.000Z" {
		t.Errorf("--format jsonl --state resolved: exit %d: %q; want one line, resolved, seq 2, at 2026-09-30T03:00:00.000Z", code, out)
	}

	// --fail-on-open: 1 when an open finding is printed, else 0.
	if code, _, _ := runFindingsCmd(append(slices.Clone(base), "--fail-on-open")...); code != exitNotDelivered {
		t.Errorf("--fail-on-open with open findings: exit %d, want 1", code)
	}
	if code, _, _ := runFindingsCmd(append(slices.Clone(base), "--fail-on-open", "--state", "resolved")...); code != exitOK {
		t.Errorf("--fail-on-open with only resolved findings printed: exit %d, want 0", code)
	}

	// A database without handoff's tables: a failure that says what to check.
	code, _, errOut = runFindingsCmd("--clickhouse-addr", testenv.ClickHouseAddr(t), "--clickhouse-database", "handoff_no_such_db_here")
	if code != exitFailure || !strings.Contains(errOut, "--clickhouse-database") {
		t.Errorf("findings in a database with no tables: exit %d, stderr %q; want 3 naming --clickhouse-database", code, errOut)
	}
}

// TestFindingsUsageErrors: hostile or wrong flag values are usage errors
// (exit 2) naming the flag, found before ClickHouse is touched (the
// address is one nothing listens on: reaching it would be exit 3).
func TestFindingsUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--pipeline", "x' OR 1=1 --"}, "--pipeline"},
		{[]string{"--pipeline", "a,,b"}, "--pipeline"},
		{[]string{"--pipeline", "*"}, "--pipeline"},
		{[]string{"--pipeline", "a/b*"}, "--pipeline"},
		{[]string{"--from", "2026-13-01"}, "--from"},
		{[]string{"--to", "yesterday"}, "--to"},
		{[]string{"--from", "2026-10-02", "--to", "2026-10-01"}, "--from"},
		{[]string{"--state", "open') --"}, "--state"},
		{[]string{"--state", "closed"}, "--state"},
		{[]string{"--kind", "overdue,late"}, "--kind"},
		{[]string{"--kind", "a b"}, "--kind"},
		{[]string{"--limit", "0"}, "--limit"},
		{[]string{"--limit", "100001"}, "--limit"},
		{[]string{"--limit", "1e3"}, "--limit"},
		{[]string{"--format", "xml"}, "--format"},
		{[]string{"--as-of", "now"}, "--as-of"},
		{[]string{"--clickhouse-database", "handoff.findings_v2 FINAL --"}, "--clickhouse-database"},
		{[]string{"stray"}, "unexpected arguments"},
	} {
		code, out, errOut := runFindingsCmd(append([]string{"--clickhouse-addr", "127.0.0.1:1"}, tt.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tt.says) {
			t.Errorf("findings %v: exit %d, stdout %q, stderr %q; want exit 2 naming %s", tt.args, code, out, errOut, tt.says)
		}
	}
}

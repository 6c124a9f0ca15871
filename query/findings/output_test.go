package findings_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/findings"
)

// TestSummary: the summary line for each state filter, singular and
// plural, and the truncation note.
func TestSummary(t *testing.T) {
	f := func(pipeline string, state detect.State) detect.Finding {
		return detect.Finding{Batch: model.BatchKey{Pipeline: pipeline}, State: state}
	}
	for _, tt := range []struct {
		res   findings.Result
		state string
		want  string
	}{
		{findings.Result{}, "open", "no open findings"},
		{findings.Result{}, "resolved", "no resolved findings"},
		{findings.Result{}, "", "no findings"},
		{findings.Result{Findings: []detect.Finding{f("a", "open")}}, "open", "1 open finding, 1 pipeline"},
		{findings.Result{Findings: []detect.Finding{f("a", "open"), f("b", "open"), f("a", "open")}}, "open", "3 open findings, 2 pipelines"},
		{findings.Result{Findings: []detect.Finding{f("a", "open"), f("a", "resolved")}}, "", "2 findings (1 open, 1 resolved), 1 pipeline"},
		{findings.Result{Findings: []detect.Finding{f("a", "resolved")}, Truncated: true}, "resolved",
			"1 resolved finding, 1 pipeline; more match: these are the first 1 (narrow the filters or raise the limit)"},
	} {
		if got := findings.Summary(tt.res, tt.state); got != tt.want {
			t.Errorf("Summary(%d findings, %q) = %q, want %q", len(tt.res.Findings), tt.state, got, tt.want)
		}
	}
}

// TestJSONOutput: both JSON forms parse, hold every finding once, keep
// &, < and > as they are, and say nothing but the envelope for none.
func TestJSONOutput(t *testing.T) {
	res := findings.Result{Findings: []detect.Finding{
		{Fingerprint: "1", Batch: model.BatchKey{Pipeline: "a&b<c>"}, State: "open", RaisedAt: time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)},
		{Fingerprint: "2", Batch: model.BatchKey{Pipeline: "d"}, State: "resolved"},
	}, Truncated: true}
	var b bytes.Buffer
	if err := findings.WriteJSON(&b, res, time.Time{}); err != nil {
		t.Fatal(err)
	}
	type listed struct {
		Fingerprint string `json:"fingerprint"`
		Pipeline    string `json:"pipeline"`
	}
	var doc struct {
		Count     int      `json:"count"`
		Truncated bool     `json:"truncated"`
		Findings  []listed `json:"findings"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("WriteJSON: %v\n%s", err, b.String())
	}
	if doc.Count != 2 || !doc.Truncated || len(doc.Findings) != 2 || doc.Findings[0].Pipeline != "a&b<c>" ||
		!strings.Contains(b.String(), `"pipeline":"a&b<c>"`) || strings.Count(b.String(), "\n") != 4 {
		t.Errorf("WriteJSON: %s; want the two findings one per line, truncated, & < > unescaped", b.String())
	}
	b.Reset()
	if err := findings.WriteJSONL(&b, res, time.Time{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	var first listed
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Fingerprint != "1" || !strings.Contains(lines[0], "a&b<c>") {
		t.Errorf("WriteJSONL: %q; want two lines, the first finding 1 unescaped", b.String())
	}
	for want, write := range map[string]func(*bytes.Buffer) error{
		`{"count":0,"truncated":false,"findings":[]}` + "\n": func(b *bytes.Buffer) error { return findings.WriteJSON(b, findings.Result{}, time.Time{}) },
		"": func(b *bytes.Buffer) error { return findings.WriteJSONL(b, findings.Result{}, time.Time{}) },
	} {
		b.Reset()
		if err := write(&b); err != nil || b.String() != want {
			t.Errorf("no findings: %q, %v; want %q", b.String(), err, want)
		}
	}
}

// TestTextEscapesControls: stored text (a pipeline name with a C1 CSI, a
// kind with an ESC sequence, a verdict with a bidi override) reaches the
// terminal escaped, and the columns still line up on what is printed.
func TestTextEscapesControls(t *testing.T) {
	at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	f := detect.Finding{Batch: model.BatchKey{Pipeline: "abs\u009b2Jdaily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"},
		State: detect.Open, Kind: detect.Kind("late\x1b]52;c;ZXZpbA==\x07"), Name: "signal_delivered", Verdict: "x\u202elate", Status: "late", RaisedAt: at}
	res := findings.Result{Findings: []detect.Finding{f}}
	var out strings.Builder
	if err := findings.WriteText(&out, res, findings.StateOpen, findings.Times{AsOf: at}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"\x1b", "\u009b", "\u202e", "\x07"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("output holds %q raw:\n%s", bad, out.String())
		}
	}
	for _, want := range []string{`abs\u009b2Jdaily`, `late\x1b]52;c;ZXZpbA==\x07`, `x\u202elate`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks the escaped %s:\n%s", want, out.String())
		}
	}
}

// TestTextBoundary: the BOUNDARY column of an overdue or failed finding is
// the finding's own boundary, even when the diagnosis it carries has moved
// on (the seed's signal_delivered finding resolves while the batch, its
// flag restored, waits for the consumer); other kinds show where the batch
// stopped.
func TestTextBoundary(t *testing.T) {
	for _, tt := range []struct {
		kind        detect.Kind
		name, first string
		want        string
	}{
		{detect.Overdue, "signal_delivered", "consumed", "signal_delivered"},
		{detect.Failed, "consumed", "identified", "consumed"},
		{"identity_mismatch", "", "signaled", "signaled"},
		{detect.Missing, "not_produced", "", "not_produced"},
	} {
		key, err := model.ParseBatchKey("p/2026-09-30/20260930")
		if err != nil {
			t.Fatal(err)
		}
		f := detect.Finding{Kind: tt.kind, Name: tt.name, Batch: key, State: detect.Resolved}
		f.Diagnosis.FirstMissing = tt.first
		var b bytes.Buffer
		if err := findings.WriteText(&b, findings.Result{Findings: []detect.Finding{f}}, "", findings.Times{AsOf: time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		if len(lines) < 2 || strings.Fields(lines[1])[4] != tt.want {
			t.Errorf("%s finding %q (first missing %q): BOUNDARY column of\n%s\nwant %q", tt.kind, tt.name, tt.first, b.String(), tt.want)
		}
	}
}

// TestLate: an open finding with a deadline is late as of the time asked,
// not as recorded; one without a deadline (an anomaly) or resolved keeps
// its recorded lateness.
func TestLate(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for _, tt := range []struct {
		name string
		f    detect.Finding
		want time.Duration
	}{
		{"open, deadline", detect.Finding{State: detect.Open, Deadline: at("2026-09-30T22:00:00Z"), Lateness: time.Hour}, 50 * time.Hour},
		{"open, no deadline", detect.Finding{State: detect.Open, Lateness: 2 * time.Hour}, 2 * time.Hour},
		{"resolved", detect.Finding{State: detect.Resolved, Deadline: at("2026-09-30T22:00:00Z"), Lateness: 3 * time.Hour}, 3 * time.Hour},
		{"open, deadline after the as-of", detect.Finding{State: detect.Open, Deadline: at("2026-10-04T00:00:00Z")}, 0},
	} {
		if got := findings.Late(&tt.f, at("2026-10-03T00:00:00Z")); got != tt.want {
			t.Errorf("%s: Late = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestJSONListing: the listing's JSON of a finding, field by field (the
// form `handoff findings --format json` and the serve API print).
func TestJSONListing(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, s); return v }
	k := model.BatchKey{Pipeline: "p.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	f := detect.Finding{Fingerprint: "00000000000000ab", State: detect.Resolved, Kind: detect.Overdue, Name: "consumed", Batch: k,
		Status: "delivered", Verdict: "delivered", Seq: 2, RaisedAt: at("2026-09-30T23:00:00Z"), ResolvedAt: at("2026-10-01T03:00:00.5Z"),
		Deadline: at("2026-09-30T23:00:00Z"), Lateness: 4 * time.Hour, EvidenceAsOf: at("2026-10-01T03:00:01.002Z"),
		Severity: "critical", Owner: "team", Labels: map[string]string{"x": "y"}}
	f.Diagnosis.FirstMissing = ""
	want := `{"fingerprint":"00000000000000ab","batch":"p.daily/2026-09-30/20260930","pipeline":"p.daily","business_date":"2026-09-30",` +
		`"batch_id":"20260930","state":"resolved","kind":"overdue","name":"consumed","seq":2,"raised_at":"2026-09-30T23:00:00.000Z",` +
		`"resolved_at":"2026-10-01T03:00:00.500Z","deadline":"2026-09-30T23:00:00.000Z","lateness_ms":14400000,` +
		`"evidence_as_of":"2026-10-01T03:00:01.002Z","severity":"critical","owner":"team","status":"delivered","verdict":"delivered","first_missing":""}`
	if got := string(findings.AppendJSON(nil, &f, at("2026-10-03T00:00:00Z"))); got != want {
		t.Errorf("AppendJSON:\n got %s\nwant %s", got, want)
	}
	f.State, f.ResolvedAt, f.Deadline = detect.Open, time.Time{}, time.Time{}
	if got := string(findings.AppendJSON(nil, &f, time.Time{})); strings.Contains(got, "resolved_at") || strings.Contains(got, "deadline") {
		t.Errorf("open, no deadline: %s; want neither resolved_at nor deadline", got)
	}
}

// TestTextAndJSONLatenessAgree checks that the text listing's LATE and the
// JSON's lateness_ms say the same for open and resolved findings, as of
// the same time, and that the JSON names the as-of of a counted lateness.
func TestTextAndJSONLatenessAgree(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, s); return v }
	k := model.BatchKey{Pipeline: "p.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	asOf := at("2026-10-03T00:00:00Z")
	for _, tc := range []struct {
		name   string
		f      detect.Finding
		late   string // the LATE column
		ms     int64
		stated bool // lateness_as_of present
	}{
		{"open, counted to the as-of", detect.Finding{State: detect.Open, Kind: detect.Overdue, Name: "signal_delivered", Batch: k,
			RaisedAt: at("2026-09-30T22:00:05Z"), Deadline: at("2026-09-30T22:00:00Z"), Lateness: 2 * time.Hour, EvidenceAsOf: at("2026-10-01T00:00:00Z")},
			"2d 2h 0m", (50 * time.Hour).Milliseconds(), true},
		{"resolved, recorded", detect.Finding{State: detect.Resolved, Kind: detect.Overdue, Name: "signal_delivered", Batch: k,
			RaisedAt: at("2026-09-30T22:00:05Z"), ResolvedAt: at("2026-10-01T01:00:00Z"), Deadline: at("2026-09-30T22:00:00Z"), Lateness: 3 * time.Hour, EvidenceAsOf: at("2026-10-01T01:00:00Z")},
			"3h 0m", (3 * time.Hour).Milliseconds(), false},
		{"open anomaly, no deadline", detect.Finding{State: detect.Open, Kind: "row_mismatch", Batch: k, RaisedAt: at("2026-09-30T22:00:05Z"), EvidenceAsOf: at("2026-10-01T00:00:00Z")},
			"-", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := findings.Result{Findings: []detect.Finding{tc.f}}
			var text, js bytes.Buffer
			if err := findings.WriteText(&text, res, "", findings.Times{AsOf: asOf}); err != nil {
				t.Fatal(err)
			}
			if err := findings.WriteJSON(&js, res, asOf); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(text.String(), "\n")
			header, row := lines[0], lines[1]
			col := strings.Index(header, "LATE")
			if col < 0 || col >= len(row) {
				t.Fatalf("no LATE column:\n%s", text.String())
			}
			// The column ends at the gap of two spaces before the next
			// (a lateness holds single spaces: "2d 2h 0m").
			lateText, _, _ := strings.Cut(strings.TrimRight(row[col:], " "), "  ")
			if lateText != tc.late {
				t.Errorf("LATE %q, want %q:\n%s", lateText, tc.late, text.String())
			}
			var out struct {
				Findings []struct {
					LatenessMs   int64   `json:"lateness_ms"`
					LatenessAsOf *string `json:"lateness_as_of"`
				} `json:"findings"`
			}
			if err := json.Unmarshal(js.Bytes(), &out); err != nil || len(out.Findings) != 1 {
				t.Fatalf("decode %s: %v", js.String(), err)
			}
			got := out.Findings[0]
			if got.LatenessMs != tc.ms {
				t.Errorf("lateness_ms %d, want %d", got.LatenessMs, tc.ms)
			}
			if late := time.Duration(got.LatenessMs) * time.Millisecond; (late > 0 && replay.FormatDuration(late) != tc.late) || (late == 0 && tc.late != "-") {
				t.Errorf("JSON lateness %v reads %q in text, text says %q", late, replay.FormatDuration(late), tc.late)
			}
			if (got.LatenessAsOf != nil) != tc.stated || (got.LatenessAsOf != nil && *got.LatenessAsOf != "2026-10-03T00:00:00.000Z") {
				t.Errorf("lateness_as_of %v, want present %t (2026-10-03T00:00:00.000Z)", got.LatenessAsOf, tc.stated)
			}
		})
	}
}

// TestTextZone checks that OPENED, DUE and RESOLVED show the pipeline's
// zone beside UTC, and UTC alone for a pipeline without one.
func TestTextZone(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, s); return v }
	f := detect.Finding{State: detect.Resolved, Kind: detect.Overdue, Name: "signal_delivered",
		Batch:    model.BatchKey{Pipeline: "abs.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"},
		RaisedAt: at("2026-09-30T22:00:05Z"), Deadline: at("2026-09-30T22:00:00Z"), ResolvedAt: at("2026-10-01T01:20:05.120Z")}
	g := f
	g.Batch.Pipeline = "other.daily"
	zone := func(p string) *time.Location {
		if p == "abs.daily" {
			return shanghai
		}
		return nil
	}
	var b bytes.Buffer
	if err := findings.WriteText(&b, findings.Result{Findings: []detect.Finding{f, g}}, "", findings.Times{Zone: zone}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, want := range []string{"2026-09-30 22:00:05 UTC (06:00:05 Asia/Shanghai, next day)", "2026-09-30 22:00 UTC (06:00 Asia/Shanghai, next day)", "2026-10-01 01:20:05.120 UTC (09:20:05.120 Asia/Shanghai)"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("abs.daily line lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(lines[2], "Asia/Shanghai") || !strings.Contains(lines[2], "2026-10-01 01:20:05.120 UTC") {
		t.Errorf("other.daily line: want UTC alone:\n%s", b.String())
	}
}

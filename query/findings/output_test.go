package findings_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
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
	if err := findings.WriteJSON(&b, res); err != nil {
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
	if err := findings.WriteJSONL(&b, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	var first listed
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Fingerprint != "1" || !strings.Contains(lines[0], "a&b<c>") {
		t.Errorf("WriteJSONL: %q; want two lines, the first finding 1 unescaped", b.String())
	}
	for want, write := range map[string]func(*bytes.Buffer) error{
		`{"count":0,"truncated":false,"findings":[]}` + "\n": func(b *bytes.Buffer) error { return findings.WriteJSON(b, findings.Result{}) },
		"": func(b *bytes.Buffer) error { return findings.WriteJSONL(b, findings.Result{}) },
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
	if err := findings.WriteText(&out, res, findings.StateOpen, at); err != nil {
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
		if err := findings.WriteText(&b, findings.Result{Findings: []detect.Finding{f}}, "", time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)); err != nil {
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
		`"batch_id":"20260930","state":"resolved","kind":"overdue","name":"consumed","seq":2,"raised_at":"2026-09-30T23:00:00Z",` +
		`"resolved_at":"2026-10-01T03:00:00.5Z","deadline":"2026-09-30T23:00:00Z","lateness_ms":14400000,` +
		`"evidence_as_of":"2026-10-01T03:00:01.002Z","severity":"critical","owner":"team","status":"delivered","verdict":"delivered","first_missing":""}`
	if got := string(findings.AppendJSON(nil, &f)); got != want {
		t.Errorf("AppendJSON:\n got %s\nwant %s", got, want)
	}
	f.State, f.ResolvedAt, f.Deadline = detect.Open, time.Time{}, time.Time{}
	if got := string(findings.AppendJSON(nil, &f)); strings.Contains(got, "resolved_at") || strings.Contains(got, "deadline") {
		t.Errorf("open, no deadline: %s; want neither resolved_at nor deadline", got)
	}
}

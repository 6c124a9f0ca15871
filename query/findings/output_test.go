package findings_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/query/findings"
)

// TestSummary: the summary line for each state filter, singular and
// plural, and the truncation note.
func TestSummary(t *testing.T) {
	f := func(pipeline, state string) findings.Finding {
		return findings.Finding{Pipeline: pipeline, State: state}
	}
	for _, tt := range []struct {
		res   findings.Result
		state string
		want  string
	}{
		{findings.Result{}, "open", "no open findings"},
		{findings.Result{}, "resolved", "no resolved findings"},
		{findings.Result{}, "", "no findings"},
		{findings.Result{Findings: []findings.Finding{f("a", "open")}}, "open", "1 open finding, 1 pipeline"},
		{findings.Result{Findings: []findings.Finding{f("a", "open"), f("b", "open"), f("a", "open")}}, "open", "3 open findings, 2 pipelines"},
		{findings.Result{Findings: []findings.Finding{f("a", "open"), f("a", "resolved")}}, "", "2 findings (1 open, 1 resolved), 1 pipeline"},
		{findings.Result{Findings: []findings.Finding{f("a", "resolved")}, Truncated: true}, "resolved",
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
	res := findings.Result{Findings: []findings.Finding{
		{Fingerprint: "1", Pipeline: "a&b<c>", State: "open", RaisedAt: time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)},
		{Fingerprint: "2", Pipeline: "d", State: "resolved"},
	}, Truncated: true}
	var b bytes.Buffer
	if err := findings.WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Count     int                `json:"count"`
		Truncated bool               `json:"truncated"`
		Findings  []findings.Finding `json:"findings"`
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
	var first findings.Finding
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
	res := findings.Result{Findings: []findings.Finding{{
		Pipeline: "abs\u009b2Jdaily", BusinessDate: "2026-09-30", BatchID: "20260930", State: findings.StateOpen,
		Kind: "late\x1b]52;c;ZXZpbA==\x07", Name: "signal_delivered", Verdict: "x\u202elate", Status: "late", RaisedAt: at,
	}}}
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
		f    findings.Finding
		want string
	}{
		{findings.Finding{Kind: "overdue", Name: "signal_delivered", FirstMissing: "consumed", State: "resolved"}, "signal_delivered"},
		{findings.Finding{Kind: "failed", Name: "consumed", FirstMissing: "identified", State: "open"}, "consumed"},
		{findings.Finding{Kind: "identity_mismatch", FirstMissing: "signaled", State: "open"}, "signaled"},
		{findings.Finding{Kind: "missing", Name: "not_produced", State: "open"}, "not_produced"},
	} {
		tt.f.Pipeline, tt.f.BusinessDate, tt.f.BatchID = "p", "2026-09-30", "20260930"
		var b bytes.Buffer
		if err := findings.WriteText(&b, findings.Result{Findings: []findings.Finding{tt.f}}, "", time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		if len(lines) < 2 || strings.Fields(lines[1])[4] != tt.want {
			t.Errorf("%s finding %q (first missing %q): BOUNDARY column of\n%s\nwant %q", tt.f.Kind, tt.f.Name, tt.f.FirstMissing, b.String(), tt.want)
		}
	}
}

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

// lifecycle is a seed-style listing: the ledger's first attempt of
// 2026-09-19 failed and was superseded by its re-run 20260919-r2; the
// balance's signal of 2026-09-20 was on time by its event time but
// reached the detector three minutes after the deadline; a plain late
// resolution; one still open.
func lifecycle() findings.Result {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v.UTC() }
	key := func(p, date, id string) model.BatchKey {
		return model.BatchKey{Pipeline: p, BusinessDate: model.MustParseDate(date), BatchID: id}
	}
	first, rerun := key("finance.ledger.daily", "2026-09-19", "20260919"), key("finance.ledger.daily", "2026-09-19", "20260919-r2")
	balance, ledger20 := key("finance.balance.daily", "2026-09-20", "20260920"), key("finance.ledger.daily", "2026-09-20", "20260920")
	audit := key("ops.audit.daily", "2026-09-20", "20260920")
	f := func(k model.BatchKey, kind detect.Kind, name string, state detect.State, status replay.Status, verdict string, fm string) detect.Finding {
		return detect.Finding{Fingerprint: detect.Fingerprint(k, kind, name), Batch: k, Kind: kind, Name: name, State: state,
			Status: status, Verdict: verdict, Seq: 1, Severity: "critical", Owner: "ledger-team",
			Diagnosis: replay.Diagnosis{Batch: k.String(), FirstMissing: fm}}
	}
	superseded := f(first, detect.Failed, "produced", detect.Resolved, "failed", "not_produced", "produced")
	superseded.Seq, superseded.RaisedAt, superseded.ResolvedAt = 2, at("2026-09-20T01:12:00Z"), at("2026-09-20T04:31:05Z")
	superseded.EvidenceAsOf = superseded.ResolvedAt
	superseded.SupersededBy = rerun.String()
	superseded.Resolution = "superseded by " + rerun.String()

	reported := f(balance, detect.Overdue, "signal_delivered", detect.Resolved, "delivered", "delivered", "")
	reported.Seq, reported.RaisedAt, reported.ResolvedAt = 2, at("2026-09-21T06:00:00Z"), at("2026-09-21T06:02:10Z")
	reported.Deadline, reported.EvidenceAsOf = at("2026-09-21T06:00:00Z"), reported.ResolvedAt
	reported.ReportingDelay = 3*time.Minute + 10*time.Second
	reported.Resolution = "on time (signal_delivered at 2026-09-21T05:59:00Z, deadline 2026-09-21T06:00:00Z), reported late by 3m"

	plain := f(audit, detect.Overdue, "consumed", detect.Resolved, "delivered", "delivered", "")
	plain.Seq, plain.RaisedAt, plain.ResolvedAt = 2, at("2026-09-21T07:00:00Z"), at("2026-09-21T07:12:00Z")
	plain.Deadline, plain.EvidenceAsOf, plain.Lateness = at("2026-09-21T07:00:00Z"), plain.ResolvedAt, 12*time.Minute

	open := f(ledger20, detect.Overdue, "consumed", detect.Open, "late", "not_consumed", "consumed")
	open.RaisedAt, open.Deadline, open.EvidenceAsOf = at("2026-09-21T07:00:00Z"), at("2026-09-21T07:00:00Z"), at("2026-09-21T07:01:00Z")
	open.Lateness = time.Minute
	return findings.Result{Findings: []detect.Finding{superseded, reported, plain, open}}
}

var lifecycleAsOf = time.Date(2026, 9, 21, 7, 30, 0, 0, time.UTC)

// TestLifecycleGolden: the text and JSON listings of findings that ended
// superseded, reported late, plainly, and one open, as reviewed under
// testdata/.
func TestLifecycleGolden(t *testing.T) {
	res := lifecycle()
	for _, tt := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"lifecycle.txt", func(b *bytes.Buffer) error {
			return findings.WriteText(b, res, "", findings.Times{AsOf: lifecycleAsOf})
		}},
		{"lifecycle-open.txt", func(b *bytes.Buffer) error {
			return findings.WriteText(b, findings.Result{Findings: res.Findings[3:]}, findings.StateOpen, findings.Times{AsOf: lifecycleAsOf})
		}},
		{"lifecycle.json", func(b *bytes.Buffer) error { return findings.WriteJSON(b, res, lifecycleAsOf) }},
	} {
		var b bytes.Buffer
		if err := tt.write(&b); err != nil {
			t.Fatal(err)
		}
		golden(t, tt.name, b.Bytes())
	}
}

// TestLifecycleText: the RESOLUTION column says how each finding ended,
// in short, and is there only when one did not end the plain way.
func TestLifecycleText(t *testing.T) {
	res := lifecycle()
	var b strings.Builder
	if err := findings.WriteText(&b, res, "", findings.Times{AsOf: lifecycleAsOf}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{"RESOLUTION", "superseded by 20260919-r2", "on time, reported late by 3m", " -"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q lacks %q", i, lines[i], want)
		}
	}
	b.Reset()
	if err := findings.WriteText(&b, findings.Result{Findings: res.Findings[2:]}, "", findings.Times{AsOf: lifecycleAsOf}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "RESOLUTION") {
		t.Errorf("a RESOLUTION column with no finding that ended other than plainly:\n%s", b.String())
	}
	for _, tt := range []struct {
		f    detect.Finding
		want string
	}{
		{detect.Finding{SupersededBy: "p/2026-09-19/20260919-r2", Resolution: "superseded by p/2026-09-19/20260919-r2, an attempt of the same date"}, "superseded by 20260919-r2"},
		{detect.Finding{ReportingDelay: 7 * time.Minute, Resolution: "on time (...), reported late by 7m"}, "on time, reported late by 7m"},
		{detect.Finding{Resolution: "something else"}, "something else"},
		{detect.Finding{}, ""},
	} {
		if got := findings.Resolution(&tt.f); got != tt.want {
			t.Errorf("Resolution(%+v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

// TestLifecycleJSONAsTopic: the listing's reporting_delay_ms, resolution
// and superseded_by are the findings topic record's (detect's AppendJSON),
// present and absent alike.
func TestLifecycleJSONAsTopic(t *testing.T) {
	type ended struct {
		Delay        *int64  `json:"reporting_delay_ms"`
		Resolution   *string `json:"resolution"`
		SupersededBy *string `json:"superseded_by"`
	}
	for _, f := range lifecycle().Findings {
		var listed, topic ended
		if err := json.Unmarshal(findings.AppendJSON(nil, &f, lifecycleAsOf), &listed); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(f.AppendJSON(nil), &topic); err != nil {
			t.Fatal(err)
		}
		str := func(e ended) string {
			b, _ := json.Marshal(e)
			return string(b)
		}
		if str(listed) != str(topic) {
			t.Errorf("%s %s: listing %s, topic record %s", f.Batch, f.Kind, str(listed), str(topic))
		}
	}
}

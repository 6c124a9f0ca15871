package notify

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// seedFinding is the detector's record of the seed case (the golden file
// of analyzer/detect's TestSeedCase), parsed as notify parses the topic.
func seedFinding(t testing.TB) detect.Finding {
	t.Helper()
	b, err := os.ReadFile("../analyzer/detect/testdata/seed-findings.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f, err := detect.ParseFinding(line)
	if err != nil {
		t.Fatalf("seed finding: %v", err)
	}
	return f
}

var sendAt = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

// TestSeedAlert checks the alert of the seed batch's finding field by field
// against the seed case, and keeps its JSON in testdata/seed-alert.json
// (the example of docs/alerting.md).
func TestSeedAlert(t *testing.T) {
	f := seedFinding(t)
	a := AlertOf(&f, "http://handoff.example:8080/", sendAt, 5*time.Minute)
	wantLabels := map[string]string{
		"alertname": "HandoffBatchOverdue", "pipeline": "account-balance-snapshot.daily",
		"business_date": "2026-09-30", "batch_id": "20260930", "batch": "account-balance-snapshot.daily/2026-09-30/20260930",
		"kind": "overdue", "boundary": "signal_delivered", "status": "late", "verdict": "not_identified", "severity": "warning",
	}
	if !maps.Equal(a.Labels, wantLabels) {
		t.Errorf("labels\n got %v\nwant %v", a.Labels, wantLabels)
	}
	if !a.StartsAt.Equal(f.RaisedAt) || !a.EndsAt.Equal(sendAt.Add(5*time.Minute)) {
		t.Errorf("startsAt %s endsAt %s, want raised_at %s and send time + lease", a.StartsAt, a.EndsAt, f.RaisedAt)
	}
	wantURL := "http://handoff.example:8080/batches/account-balance-snapshot.daily/2026-09-30/20260930"
	if a.GeneratorURL != wantURL || a.Annotations["batch_url"] != wantURL {
		t.Errorf("links %q, %q; want %q", a.GeneratorURL, a.Annotations["batch_url"], wantURL)
	}
	for k, want := range map[string]string{
		"summary":       "account-balance-snapshot.daily/2026-09-30/20260930: signal_delivered overdue by 15m (status late, verdict not_identified)",
		"first_missing": "signal_delivered",
		"deadline":      "2026-09-30T22:00:00.000Z",
		"lateness":      "15m",
		"fingerprint":   "b2cc3eaca6e2972c",
		"seq":           "1",
	} {
		if a.Annotations[k] != want {
			t.Errorf("annotation %s = %q, want %q", k, a.Annotations[k], want)
		}
	}
	if ns := a.Annotations["next_step"]; !strings.HasPrefix(ns, "restore_signal: ") || !strings.Contains(ns, "account_balance_snapshot_20260930.flag") {
		t.Errorf("next_step %q: want restore_signal of the derived flag", ns)
	}
	got, err := json.MarshalIndent([]Alert{a}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "testdata/seed-alert.json", append(got, '\n'))
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./notify -run %s -update creates it)", err, t.Name())
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (go test -run %s -update rewrites it)\nwant %s\n got %s", path, t.Name(), want, got)
	}
}

// TestLabelsByKind checks the labels that differ between kinds: the
// alertname, the boundary (the name, the first missing boundary for
// missing, none for anomalies), and the contract's routing fields.
func TestLabelsByKind(t *testing.T) {
	seed := seedFinding(t)
	for _, tt := range []struct {
		name      string
		kind      detect.Kind
		fname     string
		severity  string
		owner     string
		labels    map[string]string
		alertname string
		boundary  string
		want      map[string]string // further labels that must be present
		absent    []string
	}{
		{name: "overdue", kind: detect.Overdue, fname: "signal_delivered", alertname: "HandoffBatchOverdue", boundary: "signal_delivered",
			want: map[string]string{"severity": "warning"}, absent: []string{"owner"}},
		{name: "missing", kind: detect.Missing, fname: "not_produced", alertname: "HandoffBatchMissing", boundary: "signal_delivered"},
		{name: "failed", kind: detect.Failed, fname: "consumed", alertname: "HandoffBatchFailed", boundary: "consumed"},
		// An early warning is info even on a critical pipeline: it never pages.
		{name: "unusual", kind: detect.Unusual, fname: "produced", alertname: "HandoffBatchUnusual", boundary: "produced", severity: "critical",
			owner: "treasury-data", want: map[string]string{"severity": "info", "kind": "unusual", "owner": "treasury-data"}},
		{name: "anomaly with routing", kind: "row_mismatch", alertname: "HandoffBatchAnomaly", severity: "critical", owner: "treasury-data",
			labels: map[string]string{"team": "treasury", "tier": "1"},
			want:   map[string]string{"severity": "critical", "owner": "treasury-data", "team": "treasury", "tier": "1", "kind": "row_mismatch"}, absent: []string{"boundary"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := seed
			f.Kind, f.Name, f.Severity, f.Owner, f.Labels = tt.kind, tt.fname, tt.severity, tt.owner, tt.labels
			l := Labels(&f)
			if l["alertname"] != tt.alertname {
				t.Errorf("alertname %q, want %q", l["alertname"], tt.alertname)
			}
			if tt.boundary != "" && l["boundary"] != tt.boundary {
				t.Errorf("boundary %q, want %q", l["boundary"], tt.boundary)
			}
			for k, v := range tt.want {
				if l[k] != v {
					t.Errorf("label %s = %q, want %q", k, l[k], v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := l[k]; ok {
					t.Errorf("label %s = %q, want none", k, l[k])
				}
			}
		})
	}
}

// TestResolvedAlert: a resolved finding ends at its resolved_at, whatever
// the send time, and says so in its summary.
func TestResolvedAlert(t *testing.T) {
	f := seedFinding(t)
	f.State, f.Seq, f.ResolvedAt = detect.Resolved, 2, time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC)
	a := AlertOf(&f, "", sendAt.Add(time.Hour), 5*time.Minute)
	if !a.EndsAt.Equal(f.ResolvedAt) || !a.StartsAt.Equal(f.RaisedAt) {
		t.Errorf("startsAt %s endsAt %s; want raised_at and resolved_at", a.StartsAt, a.EndsAt)
	}
	if !strings.HasPrefix(a.Annotations["summary"], "resolved: ") || a.GeneratorURL != "" || a.Annotations["batch_url"] != "" {
		t.Errorf("summary %q, links %q %q: want resolved, no link without a serve URL", a.Annotations["summary"], a.GeneratorURL, a.Annotations["batch_url"])
	}
}

// TestBatchURLEscapes: a batch id with characters special in a path is
// escaped, so the link names the batch and nothing else.
func TestBatchURLEscapes(t *testing.T) {
	k := model.BatchKey{Pipeline: "p.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930 re/run?"}
	if got, want := BatchURL("https://h/base/", k), "https://h/base/batches/p.daily/2026-09-30/20260930%20re%2Frun%3F"; got != want {
		t.Errorf("BatchURL = %q, want %q", got, want)
	}
}

// TestSignature checks Sign against a value computed independently
// (openssl dgst -sha256 -hmac secret of the same body) and Verify's
// refusals.
func TestSignature(t *testing.T) {
	body := []byte(`{"fingerprint":"b2cc3eaca6e2972c","seq":3}`)
	const finding = "b2cc3eaca6e2972c/3"
	sent := time.Unix(1790000000, 0)
	// printf '%s' '1790000000.b2cc3eaca6e2972c/3.{"fingerprint":"b2cc3eaca6e2972c","seq":3}' | openssl dgst -sha256 -hmac s3cret
	const want = "t=1790000000,v1=37f19aa94b62593c7d951ef3f81b6b2911826f1bf376047002ea90a9b2faa180"
	got := Sign([]byte("s3cret"), sent, finding, body)
	if got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	for _, tt := range []struct {
		name    string
		secret  string
		body    []byte
		finding string
		header  string
		now     time.Time
		err     string // "" when valid
	}{
		{"valid", "s3cret", body, finding, got, sent.Add(time.Minute), ""},
		{"valid, receiver clock behind", "s3cret", body, finding, got, sent.Add(-time.Minute), ""},
		{"other secret", "other", body, finding, got, sent, "does not match"},
		{"body changed", "s3cret", append(append([]byte{}, body...), ' '), finding, got, sent, "does not match"},
		{"finding header changed", "s3cret", body, "b2cc3eaca6e2972c/4", got, sent, "does not match"},
		{"time changed", "s3cret", body, finding, strings.Replace(got, "t=1790000000", "t=1790000600", 1), sent.Add(10 * time.Minute), "does not match"},
		{"replayed an hour later", "s3cret", body, finding, got, sent.Add(time.Hour), "a replayed request"},
		{"from the future", "s3cret", body, finding, got, sent.Add(-time.Hour), "a replayed request"},
		{"old format", "s3cret", body, finding, "sha256=" + strings.TrimPrefix(got, "t=1790000000,v1="), sent, "want t="},
		{"no time", "s3cret", body, finding, strings.TrimPrefix(got, "t=1790000000,"), sent, "want t="},
		{"empty", "s3cret", body, finding, "", sent, "want t="},
	} {
		err := Verify([]byte(tt.secret), tt.body, tt.finding, tt.header, tt.now, DefaultTolerance)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: Verify = %v, want %q", tt.name, err, tt.err)
		}
	}
}

// TestAlertTimesMilliseconds: startsAt and endsAt are written as every
// handoff JSON time, with three fractional digits even on a whole second.
func TestAlertTimesMilliseconds(t *testing.T) {
	whole := time.Date(2026, 9, 30, 22, 15, 0, 0, time.UTC)
	b, err := json.Marshal(Alert{Labels: map[string]string{"a": "b"}, StartsAt: whole, EndsAt: whole.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ StartsAt, EndsAt string }
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	ms := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	if !ms.MatchString(back.StartsAt) || !ms.MatchString(back.EndsAt) || back.StartsAt != "2026-09-30T22:15:00.000Z" {
		t.Errorf("alert JSON %s: want startsAt and endsAt with milliseconds", b)
	}
}

// TestResolutionAnnotations: a resolved alert that did not end the plain
// way says how (resolution, superseded_by, reporting_delay, and the
// description); one that did, or an open one, has none of them.
func TestResolutionAnnotations(t *testing.T) {
	rerun := "abs.daily/2026-09-30/20260930-r2"
	for _, tt := range []struct {
		name   string
		edit   func(f *detect.Finding)
		want   map[string]string
		inDesc string
	}{
		{"superseded", func(f *detect.Finding) {
			f.SupersededBy, f.Resolution = rerun, "superseded by "+rerun
		}, map[string]string{"resolution": "superseded by " + rerun, "superseded_by": rerun}, ": superseded by " + rerun + "."},
		{"reported late", func(f *detect.Finding) {
			f.ReportingDelay, f.Lateness = 3*time.Minute, 0
			f.Resolution = "on time (signal_delivered at 2026-09-30T21:59:00Z, deadline 2026-09-30T22:00:00Z), reported late by 3m"
		}, map[string]string{"resolution": "on time (signal_delivered at 2026-09-30T21:59:00Z, deadline 2026-09-30T22:00:00Z), reported late by 3m",
			"reporting_delay": "3m", "lateness": "0m"}, "reported late by 3m."},
		{"plain", func(*detect.Finding) {}, map[string]string{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := seedFinding(t)
			f.State, f.Seq, f.ResolvedAt = detect.Resolved, 2, time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC)
			tt.edit(&f)
			a := AlertOf(&f, "", sendAt, 5*time.Minute).Annotations
			for _, k := range []string{"resolution", "superseded_by", "reporting_delay"} {
				if _, want := tt.want[k]; !want {
					if v, ok := a[k]; ok {
						t.Errorf("annotation %s = %q, want none", k, v)
					}
				}
			}
			for k, v := range tt.want {
				if a[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, a[k], v)
				}
			}
			if tt.inDesc != "" && !strings.Contains(a["description"], tt.inDesc) {
				t.Errorf("description %q lacks %q", a["description"], tt.inDesc)
			}
		})
	}
}

// TestIncidentURLAnnotation: a root finding's alert links the incident page
// of its own batch beside its batch page, under the same serve URL; a
// blocked finding's links its root's; without a serve URL, no link.
func TestIncidentURLAnnotation(t *testing.T) {
	root := seedFinding(t)
	blocked := seedFinding(t)
	blocked.Batch = model.BatchKey{Pipeline: "risk report/é", BusinessDate: root.Batch.BusinessDate, BatchID: "20260930"}
	blocked.Root, blocked.RootBatch = "fp-root", root.Batch.String()
	own := seedFinding(t)
	own.RootBatch = own.Batch.String() // a root may name itself
	for _, tt := range []struct {
		name, base string
		f          detect.Finding
		batch, inc string
	}{
		{"root", "http://handoff.example:8080/", root,
			"http://handoff.example:8080/batches/account-balance-snapshot.daily/2026-09-30/20260930",
			"http://handoff.example:8080/incidents/account-balance-snapshot.daily/2026-09-30/20260930"},
		{"root naming itself", "http://h", own, "http://h/batches/account-balance-snapshot.daily/2026-09-30/20260930",
			"http://h/incidents/account-balance-snapshot.daily/2026-09-30/20260930"},
		{"blocked", "http://h", blocked, "http://h/batches/risk%20report%2F%C3%A9/2026-09-30/20260930",
			"http://h/incidents/account-balance-snapshot.daily/2026-09-30/20260930"},
		{"no serve URL", "", root, "", ""},
	} {
		a := Annotations(&tt.f, tt.base)
		if a["batch_url"] != tt.batch || a["incident_url"] != tt.inc {
			t.Errorf("%s: batch_url %q incident_url %q, want %q and %q", tt.name, a["batch_url"], a["incident_url"], tt.batch, tt.inc)
		}
		if _, ok := a["incident_url"]; ok && tt.inc == "" {
			t.Errorf("%s: incident_url set without a serve URL", tt.name)
		}
	}
}

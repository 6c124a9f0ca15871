package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/notify"
)

// seedDayLines returns the seed case's delivered batch (2026-09-29) under
// pipeline, moved to business date d and later by shift: the same ladder,
// ids and object names of that date.
func seedDayLines(t *testing.T, pipeline string, d model.Date, shift time.Duration) []model.Event {
	t.Helper()
	src := model.MustParseDate("2026-09-29")
	days := time.Duration(d.DaysSinceEpoch()-src.DaysSinceEpoch()) * 24 * time.Hour
	var dec model.Decoder
	var out []model.Event
	for _, l := range seedLines(t) {
		e, err := dec.Decode([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if e.BusinessDate != src || e.Pipeline != "account-balance-snapshot.daily" {
			continue
		}
		e.Pipeline = pipeline
		e.BusinessDate = d
		e.BatchID = strings.ReplaceAll(e.BatchID, src.Compact(), d.Compact())
		e.ID = pipeline + "-" + strings.ReplaceAll(e.ID, src.Compact(), d.Compact())
		e.Object = strings.ReplaceAll(e.Object, src.Compact(), d.Compact())
		e.Time = e.Time.Add(days + shift)
		out = append(out, e)
	}
	return out
}

// seedContractAs is the seed case's contract under another pipeline name:
// produced due by 02:00 Asia/Shanghai (18:00Z) the day after the date.
func seedContractAs(t *testing.T, pipeline string) *contract.Set {
	t.Helper()
	text, err := os.ReadFile(repoFile(t, "deploy/contracts/account-balance-snapshot.daily.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	yaml := strings.Replace(string(text), "pipeline: account-balance-snapshot.daily", "pipeline: "+pipeline, 1)
	if err := os.WriteFile(filepath.Join(dir, pipeline+".yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := contract.LoadFS(os.DirFS(dir), pipeline+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// startNotify runs handoff notify on the env's findings topic, sending to
// the Alertmanager at am, from the topic's start (Since 0: the records
// are raised on the test's clock, months before the wall clock's now).
func (e *env) startNotify(t *testing.T, am string) {
	t.Helper()
	cfg := notify.Config{
		Kafka:         cliflag.Kafka{Brokers: e.brokers, Topic: e.cfg.Kafka.Topic, Partitions: e.cfg.Kafka.Partitions, Replication: 1},
		FindingsTopic: e.cfg.FindingsTopic, DLQTopic: e.pre + "notify.dlq", StateTopic: e.pre + "notify.state", Group: e.db + "-notify",
		AlertmanagerURLs: []string{am}, ServeURL: "http://127.0.0.1:8080",
		Lease: 5 * time.Minute, Resend: time.Minute,
		RetryFor: 20 * time.Second, RetryMax: 500 * time.Millisecond, RequestTimeout: 5 * time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	n, err := notify.New(ctx, cfg, notify.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("notify: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("notify did not stop within 30s")
		}
		n.Close()
	})
}

// amAlert is an alert as Alertmanager's GET /api/v2/alerts lists it, with
// the receivers its route sends it to.
type amAlert struct {
	Labels    map[string]string `json:"labels"`
	StartsAt  time.Time         `json:"startsAt"`
	Receivers []struct {
		Name string `json:"name"`
	} `json:"receivers"`
}

// amAlertsOf lists Alertmanager's alerts of batch (active, silenced or
// inhibited: a resolved alert is not listed).
func amAlertsOf(t *testing.T, am, batch string) []amAlert {
	t.Helper()
	q := url.Values{"filter": {`batch="` + batch + `"`}}
	resp, err := http.Get(am + "/api/v2/alerts?" + q.Encode())
	if err != nil {
		t.Fatalf("GET %s/api/v2/alerts: %v", am, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s/api/v2/alerts: %s", am, resp.Status)
	}
	var out []amAlert
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode Alertmanager's alerts: %v", err)
	}
	return out
}

// topicFindings reads every finding record on the findings topic: a
// batch's records in the order published (they share a partition).
func (e *env) topicFindings(t *testing.T) []detect.Finding {
	t.Helper()
	var out []detect.Finding
	for _, m := range testenv.ReadAll(t, e.brokers, e.cfg.FindingsTopic) {
		f, err := detect.ParseFinding(m.Value)
		if err != nil {
			t.Fatalf("findings topic: %v: %s", err, m.Value)
		}
		out = append(out, f)
	}
	return out
}

func summary(fs []detect.Finding) string {
	var s []string
	for _, f := range fs {
		s = append(s, fmt.Sprintf("%s %s %s %s #%d as of %s", f.Batch, f.Kind, f.Name, f.State, f.Seq, f.EvidenceAsOf.Format(time.RFC3339)))
	}
	return strings.Join(s, "; ")
}

// TestUnusualEndToEnd: 28 habitual days of the seed pipeline (produced
// between 17:14 and 17:20Z, 01:14 to 01:20 Asia/Shanghai; deadline 18:00Z)
// go through the real Kafka, handoff ingest and ClickHouse to handoff
// detect (baselines on) on a clock the test moves, and handoff notify to
// the real Alertmanager. The 29th day is a normal one: nothing is raised.
// The 30th is 40 minutes slow: once the clock passes the baseline's p95
// (17:25Z) plus the grace (10 minutes), and not before, an unusual finding
// of severity info is on the findings topic, and Alertmanager holds its
// alert (HandoffBatchUnusual) routed to the handoff-info receiver; when
// produced arrives at 17:54Z, before its deadline, the finding resolves on
// the topic and the alert in Alertmanager. No other finding is raised
// over the whole history.
func TestUnusualEndToEnd(t *testing.T) {
	am := testenv.AlertmanagerURL(t)
	pipeline := testenv.Name("unusual")
	first := model.MustParseDate("2026-10-01")
	normal, slow := first.AddDays(28), first.AddDays(29)
	var events []model.Event
	for i := range 28 {
		events = append(events, seedDayLines(t, pipeline, first.AddDays(i), time.Duration(i%4)*2*time.Minute)...)
	}
	events = append(events, seedDayLines(t, pipeline, normal, 3*time.Minute)...)
	events = append(events, seedDayLines(t, pipeline, slow, 40*time.Minute)...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time.Before(events[j].Time) })
	lines := make([][]byte, len(events))
	for i := range events {
		lines[i] = events[i].AppendJSON(nil)
	}

	e := newEnvParts(t, 3)
	e.contracts = seedContractAs(t, pipeline)
	e.cfg.ExpectFrom = first.String()
	e.cfg.RetainDays = 40
	e.cfg.Heartbeat = 0
	e.cfg.Baselines = true
	e.startNotify(t, am)
	clk := newClock(first.In(time.UTC))
	d := e.startDetectorClock(t, clk.now)
	next := 0
	step := func(at time.Time) {
		t.Helper()
		next = e.publishUpTo(t, lines, next, at)
		clk.advance(at)
		d.caughtUp(t, at)
	}
	// The history, a day at a time: each date's batch has come by 00:00Z
	// the day after.
	for i := 1; i <= 28; i++ {
		step(first.AddDays(i).In(time.UTC))
	}
	at := func(d model.Date, hhmm string) time.Time {
		c, err := time.Parse("15:04", hhmm)
		if err != nil {
			t.Fatal(err)
		}
		return d.In(time.UTC).Add(time.Duration(c.Hour())*time.Hour + time.Duration(c.Minute())*time.Minute)
	}
	unusualOf := func(k model.BatchKey) []detect.Finding {
		var out []detect.Finding
		for _, f := range e.topicFindings(t) {
			if f.Batch == k && f.Kind == detect.Unusual {
				out = append(out, f)
			}
		}
		return out
	}

	// The normal day: produced at 17:17Z, inside the baseline.
	for _, hhmm := range []string{"17:10", "17:34", "17:36", "18:30"} {
		step(at(normal, hhmm))
	}
	normalKey := model.BatchKey{Pipeline: pipeline, BusinessDate: normal, BatchID: normal.Compact()}
	if fs := unusualOf(normalKey); len(fs) > 0 {
		t.Errorf("the normal day warned: %s", summary(fs))
	}

	// The slow day.
	slowKey := model.BatchKey{Pipeline: pipeline, BusinessDate: slow, BatchID: slow.Compact()}
	usually := at(slow, "17:25") // the p95's bucket of the 28 days, its upper edge
	predicted := usually.Add(learn.WarnGrace)
	deadline := at(slow, "18:00")
	step(at(slow, "17:10"))
	step(at(slow, "17:34"))
	if fs := unusualOf(slowKey); len(fs) > 0 {
		t.Fatalf("warned before the baseline's p95 plus grace (%s): %s", predicted.Format(time.RFC3339), summary(fs))
	}
	step(at(slow, "17:36"))
	var open detect.Finding
	testenv.Eventually(t, time.Minute, "the early warning on the findings topic", func() (bool, string) {
		fs := unusualOf(slowKey)
		if len(fs) > 0 {
			open = fs[0]
		}
		return len(fs) > 0, "no unusual finding of " + slowKey.String()
	})
	if open.State != detect.Open || open.Name != "produced" || open.Severity != contract.SeverityInfo {
		t.Errorf("the early warning: %s severity %q, want an open unusual finding of produced, severity info", summary([]detect.Finding{open}), open.Severity)
	}
	if !open.Deadline.Equal(predicted) || open.EvidenceAsOf.Before(predicted) || open.EvidenceAsOf.After(at(slow, "17:36")) {
		t.Errorf("warned as of %s for %s, want as of the first step past the predicted %s (usually by %s plus %s)",
			open.EvidenceAsOf.Format(time.RFC3339), open.Deadline.Format(time.RFC3339), predicted.Format(time.RFC3339), usually.Format(time.RFC3339), learn.WarnGrace)
	}
	if !open.EvidenceAsOf.Before(deadline) {
		t.Errorf("warned as of %s, not before the deadline %s", open.EvidenceAsOf, deadline)
	}
	if open.Diagnosis.Baseline != "p95 over 28 days" {
		t.Errorf("the warning's diagnosis names the baseline %q, want p95 over 28 days", open.Diagnosis.Baseline)
	}
	testenv.Eventually(t, time.Minute, "the early warning in Alertmanager, routed to handoff-info", func() (bool, string) {
		as := amAlertsOf(t, am, slowKey.String())
		if len(as) != 1 {
			return false, fmt.Sprintf("alerts %+v", as)
		}
		a := as[0]
		var rs []string
		for _, r := range a.Receivers {
			rs = append(rs, r.Name)
		}
		ok := a.Labels["alertname"] == "HandoffBatchUnusual" && a.Labels["severity"] == "info" && a.Labels["boundary"] == "produced" &&
			slices.Equal(rs, []string{"handoff-info"}) && a.StartsAt.Equal(open.RaisedAt)
		return ok, fmt.Sprintf("labels %v, receivers %v, starts %s (raised %s)", a.Labels, rs, a.StartsAt, open.RaisedAt)
	})

	// Still late at 17:50: the warning stays open; produced at 17:54Z
	// ends it.
	step(at(slow, "17:50"))
	if fs := unusualOf(slowKey); len(fs) != 1 {
		t.Errorf("by 17:50 the early warning has %d records, want the one open: %s", len(fs), summary(fs))
	}
	step(at(slow, "17:56"))
	var done detect.Finding
	testenv.Eventually(t, time.Minute, "the early warning resolved on the findings topic", func() (bool, string) {
		fs := unusualOf(slowKey)
		if len(fs) == 2 {
			done = fs[1]
		}
		return len(fs) == 2, summary(fs)
	})
	proven := provenAt(done, "produced")
	if done.State != detect.Resolved || done.Fingerprint != open.Fingerprint || proven.IsZero() || done.EvidenceAsOf.Before(proven) || done.EvidenceAsOf.After(at(slow, "17:56")) {
		t.Errorf("resolved record %s, produced proven at %s: want resolved by the step after produced came", summary([]detect.Finding{done}), proven)
	}
	testenv.Eventually(t, time.Minute, "the alert resolved in Alertmanager", func() (bool, string) {
		as := amAlertsOf(t, am, slowKey.String())
		return len(as) == 0, fmt.Sprintf("still listed: %+v", as)
	})

	// Nothing else over the whole history: the 28 habitual days, the
	// normal day, and the slow day once it was delivered.
	step(at(slow, "18:30"))
	all := e.topicFindings(t)
	var others []detect.Finding
	for _, f := range all {
		if f.Fingerprint != open.Fingerprint {
			others = append(others, f)
		}
	}
	if len(others) > 0 {
		t.Errorf("findings other than the slow day's early warning: %s", summary(others))
	}
	t.Logf("%d days: one early warning, raised as of %s (usually by %s, deadline %s), resolved as of %s; no other finding",
		30, open.EvidenceAsOf.Format(time.RFC3339), usually.Format("15:04Z"), deadline.Format("15:04Z"), done.EvidenceAsOf.Format(time.RFC3339))
}

// provenAt is when the finding's diagnosis proved boundary name.
func provenAt(f detect.Finding, name string) time.Time {
	for _, b := range f.Diagnosis.Boundaries {
		if b.Name == name && b.Proven {
			return b.At
		}
	}
	return time.Time{}
}

package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// TestAlertmanagerSeedLifecycle runs the seed case through a real
// Alertmanager (deploy/services/alertmanager.sh) and a second, recording
// one (an HA pair: each gets every alert): the seed batch's finding
// appears with its labels, is still firing after its first lease, is
// silenced by a silence on its pipeline, survives a restart of notify as
// the same single alert (same fingerprint and startsAt, re-sent from the
// rebuilt open set with no new record), and is resolved once the repair's
// records arrive.
func TestAlertmanagerSeedLifecycle(t *testing.T) {
	am := testenv.AlertmanagerURL(t)
	cfg := testConfig(t)
	s := seedStory(t, testenv.Name("abs_daily"))
	peer := &recorder{}
	peerSrv := httptest.NewServer(peer)
	defer peerSrv.Close()
	cfg.AlertmanagerURLs = []string{am, peerSrv.URL}

	first := start(t, cfg)
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, s.records[0])

	var fired amAlert
	testenv.Eventually(t, 30*time.Second, "the seed finding firing in Alertmanager", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		if len(as) != 1 || as[0].Status.State != "active" {
			return false, fmt.Sprintf("alerts %+v", as)
		}
		fired = as[0]
		return true, ""
	})
	want := map[string]string{
		"alertname": "HandoffBatchOverdue", "pipeline": s.pipeline, "business_date": "2026-09-30", "batch_id": "20260930",
		"batch": s.pipeline + "/2026-09-30/20260930", "kind": "overdue", "boundary": "signal_delivered",
		"status": "late", "verdict": "not_identified", "severity": "warning",
	}
	if !maps.Equal(fired.Labels, want) {
		t.Errorf("labels in Alertmanager\n got %v\nwant %v", fired.Labels, want)
	}
	if !fired.StartsAt.Equal(s.open.RaisedAt) {
		t.Errorf("startsAt %s, want the finding's raised_at %s", fired.StartsAt, s.open.RaisedAt)
	}
	if fired.Annotations["batch_url"] != "http://127.0.0.1:8080/batches/"+s.pipeline+"/2026-09-30/20260930" || fired.Annotations["first_missing"] != "signal_delivered" {
		t.Errorf("annotations %v: want the batch page link and the first missing boundary", fired.Annotations)
	}

	// Still there after its first lease: the re-sends moved endsAt on.
	firstEnd := fired.EndsAt
	testenv.Eventually(t, 20*time.Second, "the alert still firing after its first lease ran out", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		if len(as) != 1 || as[0].Status.State != "active" {
			return false, fmt.Sprintf("alerts %+v", as)
		}
		return time.Now().After(firstEnd.Add(time.Second)) && as[0].EndsAt.After(firstEnd), fmt.Sprintf("endsAt %s, first lease ended %s", as[0].EndsAt, firstEnd)
	})

	// The peer got the same alert.
	if got := peer.accepted(); len(got) == 0 {
		t.Errorf("the second Alertmanager received nothing")
	} else {
		var as []Alert
		if err := json.Unmarshal(got[0].body, &as); err != nil || len(as) != 1 || !maps.Equal(as[0].Labels, want) {
			t.Errorf("second Alertmanager got %s (%v); want the same alert", got[0].body, err)
		}
	}

	// A silence silences it.
	id := amSilence(t, am, s.pipeline)
	testenv.Eventually(t, 20*time.Second, "the alert suppressed by silence "+id, func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		return len(as) == 1 && as[0].Status.State == "suppressed" && slices.Contains(as[0].Status.SilencedBy, id), fmt.Sprintf("alerts %+v", as)
	})

	// Restart: the new notifier rebuilds the open finding from the topic
	// and keeps the same alert firing: no new record is published.
	first.stop(t)
	if n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic); n != 0 {
		t.Errorf("%d findings uncommitted after a graceful stop, want 0", n)
	}
	before := peer.count()
	stoppedAt := time.Now()
	second := start(t, cfg)
	select {
	case <-second.n.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the restarted notifier did not finish its rebuild in 30s")
	}
	if n := second.n.set.len(); n != 1 {
		t.Errorf("restart: %d open findings rebuilt from the topic, want 1 (the seed's)", n)
	}
	testenv.Eventually(t, 20*time.Second, "the restarted notifier re-sending the rebuilt open alert", func() (bool, string) {
		return peer.count() > before, fmt.Sprintf("%d requests to the second Alertmanager", peer.count())
	})
	testenv.Eventually(t, 20*time.Second, "one alert, the same, renewed after the restart", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		if len(as) != 1 {
			return false, fmt.Sprintf("%d alerts, want 1: %+v", len(as), as)
		}
		a := as[0]
		if a.Fingerprint != fired.Fingerprint || !a.StartsAt.Equal(fired.StartsAt) {
			t.Fatalf("after restart: alert %s from %s, want the same %s from %s", a.Fingerprint, a.StartsAt, fired.Fingerprint, fired.StartsAt)
		}
		return a.UpdatedAt.After(stoppedAt), fmt.Sprintf("updatedAt %s, stopped at %s", a.UpdatedAt, stoppedAt)
	})

	// The repair delivers the batch: the records resolve the alert.
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, s.records[1:]...)
	testenv.Eventually(t, 30*time.Second, "the alert resolved", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		return len(as) == 0, fmt.Sprintf("alerts %+v", as)
	})
	// The first Alertmanager shows the resolution before the peer got it
	// and before the offset is committed: a stop in between would leave the
	// record uncommitted, by design. So wait for every record to be
	// delivered everywhere and committed, then stop.
	testenv.Eventually(t, 30*time.Second, "every finding delivered and committed", func() (bool, string) {
		n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic)
		return n == 0, fmt.Sprintf("%d findings uncommitted", n)
	})
	second.stop(t)
	// The alert stays resolved: nothing re-sends it after the resolution.
	if as := amAlerts(t, am, s.pipeline); len(as) != 0 {
		t.Errorf("after resolution and stop: %+v", as)
	}
	if n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic); n != 0 {
		t.Errorf("%d findings uncommitted after delivery and stop, want 0", n)
	}
	// A restart after the resolution rebuilds no open finding: nothing to
	// fire again.
	third := start(t, cfg)
	select {
	case <-third.n.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the third notifier did not finish its rebuild in 30s")
	}
	if n := third.n.set.len(); n != 0 {
		t.Errorf("after a restart past the resolution, %d open findings rebuilt, want 0", n)
	}
	third.stop(t)

	var resolved *Alert
	for _, q := range peer.accepted() {
		var as []Alert
		json.Unmarshal(q.body, &as)
		for i := range as {
			if !as[i].EndsAt.After(as[i].StartsAt.Add(24*time.Hour)) && as[i].Labels["kind"] == "overdue" && as[i].Labels["boundary"] == "signal_delivered" {
				resolved = &as[i]
			}
		}
	}
	if resolved == nil || resolved.Labels["status"] != "late" {
		t.Errorf("the second Alertmanager got no resolution of the late alert (under the labels it fired with): %+v", resolved)
	}
}

// TestWebhookEndpointDownForAWhile publishes the findings of three seed
// batches while the webhook answers 503: nothing is committed while it is
// down; once it is back every record arrives exactly once, in order per
// batch, with a valid signature, nothing is dead-lettered, and everything
// ends committed.
func TestWebhookEndpointDownForAWhile(t *testing.T) {
	cfg := testConfig(t)
	var down atomic.Bool
	down.Store(true)
	hook := &recorder{fail: func(int) int {
		if down.Load() {
			return 503
		}
		return 0
	}}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	cfg.WebhookURLs = []string{srv.URL + "/handoff"}

	var all [][]byte
	wantPerBatch := map[string][]string{}
	for i := 0; i < 3; i++ {
		s := seedStory(t, testenv.Name(fmt.Sprintf("hook_%d", i)))
		for _, r := range s.records {
			f, _ := detect.ParseFinding(r)
			wantPerBatch[f.Batch.String()] = append(wantPerBatch[f.Batch.String()], f.Fingerprint+"/"+strconv.Itoa(f.Seq))
		}
		all = append(all, s.records...)
	}
	r := start(t, cfg) // creates the topics
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, all...)

	testenv.Eventually(t, 30*time.Second, "notify retrying the endpoint that is down", func() (bool, string) {
		return hook.count() >= 4, fmt.Sprintf("%d requests", hook.count())
	})
	if n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic); n != int64(len(all)) || len(hook.accepted()) != 0 {
		t.Fatalf("while the endpoint is down: %d of %d findings uncommitted, %d accepted; want all uncommitted, none accepted", n, len(all), len(hook.accepted()))
	}
	down.Store(false)

	testenv.Eventually(t, 60*time.Second, "every finding delivered to the webhook", func() (bool, string) {
		return len(hook.accepted()) >= len(all), fmt.Sprintf("%d of %d accepted, %d requests", len(hook.accepted()), len(all), hook.count())
	})
	testenv.Eventually(t, 20*time.Second, "every finding committed", func() (bool, string) {
		n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic)
		return n == 0, fmt.Sprintf("%d uncommitted", n)
	})
	r.stop(t)

	if got := len(hook.accepted()); got != len(all) {
		t.Errorf("%d records accepted for %d findings; want each once", got, len(all))
	}
	gotPerBatch := map[string][]string{}
	seen := map[string]bool{}
	for _, q := range hook.accepted() {
		if err := Verify([]byte(cfg.WebhookSecret), q.body, q.header.Get(HeaderFinding), q.header.Get(HeaderSignature), q.receiptAt, DefaultTolerance); err != nil {
			t.Errorf("signature %q on %s: %v", q.header.Get(HeaderSignature), q.body, err)
		}
		f, err := detect.ParseFinding(q.body)
		if err != nil {
			t.Fatalf("webhook body is not a finding: %v", err)
		}
		id := f.Fingerprint + "/" + strconv.Itoa(f.Seq)
		if q.header.Get(HeaderFinding) != id {
			t.Errorf("%s header %q, want %q", HeaderFinding, q.header.Get(HeaderFinding), id)
		}
		if seen[id] {
			t.Errorf("finding %s delivered twice", id)
		}
		seen[id] = true
		gotPerBatch[f.Batch.String()] = append(gotPerBatch[f.Batch.String()], id)
	}
	for b, want := range wantPerBatch {
		if !slices.Equal(gotPerBatch[b], want) {
			t.Errorf("batch %s: delivered %v, want %v in this order", b, gotPerBatch[b], want)
		}
	}
	// A group that never committed counts every message of the topic.
	if n := testenv.Uncommitted(t, cfg.Kafka.Brokers, testenv.Name("nobody"), cfg.DLQTopic); n != 0 {
		t.Errorf("%d dead letters, want 0: the endpoint came back within the retry time", n)
	}
}

// TestWebhookDeadLetter: an endpoint that never takes a record (503 for
// longer than the retry time) and one that refuses it (400, not retried)
// each get a dead letter with the reason naming the receiver, and the
// records are committed: the consumer goes on.
func TestWebhookDeadLetter(t *testing.T) {
	cfg := testConfig(t)
	cfg.RetryFor = 2 * time.Second
	down := &recorder{fail: func(int) int { return 503 }}
	refuses := &recorder{fail: func(int) int { return 400 }}
	downSrv, refusesSrv := httptest.NewServer(down), httptest.NewServer(refuses)
	defer downSrv.Close()
	defer refusesSrv.Close()
	cfg.WebhookURLs = []string{downSrv.URL, refusesSrv.URL}

	s := seedStory(t, testenv.Name("dead"))
	r := start(t, cfg)
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, s.records[0])

	reader := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Kafka.Brokers, GroupID: testenv.Name("dlq_reader"), Topic: cfg.DLQTopic, StartOffset: kafka.FirstOffset, MaxWait: 500 * time.Millisecond})
	defer reader.Close()
	reasons := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(reasons) < 2 {
		m, err := reader.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("dead letters read so far %v: %v", reasons, err)
		}
		h := map[string]string{}
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		if h[deadletter.HeaderReason] != string(RejectUndeliverable) || string(m.Value) != string(s.records[0]) || h[deadletter.HeaderSourceTopic] != cfg.FindingsTopic {
			t.Errorf("dead letter %v %s: want reason undeliverable, the record unchanged, the findings topic", h, m.Value)
		}
		reasons[h[deadletter.HeaderError]] = string(m.Key)
	}
	var sawDown, sawRefused bool
	for e := range reasons {
		sawDown = sawDown || (strings.Contains(e, downSrv.URL) && strings.Contains(e, "503") && strings.Contains(e, "attempts"))
		sawRefused = sawRefused || (strings.Contains(e, refusesSrv.URL) && strings.Contains(e, "400") && strings.Contains(e, "not retried"))
	}
	if !sawDown || !sawRefused {
		t.Errorf("dead-letter reasons %v: want one for the endpoint that was down (503, attempts) and one for the refusal (400, not retried)", reasons)
	}
	if refuses.count() != 1 {
		t.Errorf("the refusing endpoint got %d requests, want 1 (a 400 is not retried)", refuses.count())
	}
	testenv.Eventually(t, 20*time.Second, "the dead-lettered record committed", func() (bool, string) {
		n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic)
		return n == 0, fmt.Sprintf("%d uncommitted", n)
	})
	r.stop(t)
}

// TestAlertmanagerStatusChange: a finding whose status changes while open
// (late -> failed) is one alert in Alertmanager, under the new labels (the
// old label set is resolved in the same request), and its resolution,
// published with status delivered, ends the failed alert.
func TestAlertmanagerStatusChange(t *testing.T) {
	am := testenv.AlertmanagerURL(t)
	cfg := testConfig(t)
	cfg.AlertmanagerURLs = []string{am}
	// A lease far longer than the waits below: an alert that was not
	// resolved explicitly would still be listed.
	cfg.Lease, cfg.Resend = 10*time.Minute, time.Minute
	s := seedStory(t, testenv.Name("abs_status"))
	failed := s.open
	failed.Seq, failed.Status = 2, "failed"
	resolved := failed
	resolved.Seq, resolved.State, resolved.Status, resolved.ResolvedAt = 3, detect.Resolved, "delivered", s.open.RaisedAt.Add(time.Hour)

	r := start(t, cfg)
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, s.records[0])
	testenv.Eventually(t, 30*time.Second, "the late alert firing", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		return len(as) == 1 && as[0].Labels["status"] == "late", fmt.Sprintf("alerts %+v", as)
	})
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, failed.AppendJSON(nil))
	testenv.Eventually(t, 30*time.Second, "one alert, failed, the late one resolved", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		return len(as) == 1 && as[0].Labels["status"] == "failed" && as[0].Status.State == "active", fmt.Sprintf("alerts %+v", as)
	})
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, resolved.AppendJSON(nil))
	testenv.Eventually(t, 30*time.Second, "no alert left", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		return len(as) == 0, fmt.Sprintf("alerts %+v", as)
	})
	r.stop(t)
}

// TestAlertmanagerSuperseded: the seed finding, firing in the real
// Alertmanager, is resolved because a re-run of its date (20260930-r2)
// speaks for it: Alertmanager lets the alert go, and the resolution it was
// sent (seen by the recording peer of the HA pair, as Alertmanager lists
// no resolved alert) carries how it ended under the labels it fired with.
func TestAlertmanagerSuperseded(t *testing.T) {
	am := testenv.AlertmanagerURL(t)
	cfg := testConfig(t)
	peer := &recorder{}
	peerSrv := httptest.NewServer(peer)
	defer peerSrv.Close()
	cfg.AlertmanagerURLs = []string{am, peerSrv.URL}
	cfg.Lease, cfg.Resend = 10*time.Minute, time.Minute
	s := seedStory(t, testenv.Name("abs_rerun"))
	rerun := s.open.Batch
	rerun.BatchID += "-r2"
	resolved := s.open
	resolved.Seq, resolved.State, resolved.ResolvedAt = 2, detect.Resolved, s.open.RaisedAt.Add(2*time.Hour)
	resolved.EvidenceAsOf = resolved.ResolvedAt
	resolved.SupersededBy, resolved.Resolution = rerun.String(), "superseded by "+rerun.String()

	r := start(t, cfg)
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, s.records[0])
	testenv.Eventually(t, 30*time.Second, "the seed alert firing", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		return len(as) == 1 && as[0].Status.State == "active", fmt.Sprintf("alerts %+v", as)
	})
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, resolved.AppendJSON(nil))
	testenv.Eventually(t, 30*time.Second, "the alert resolved in Alertmanager", func() (bool, string) {
		as := amAlerts(t, am, s.pipeline)
		return len(as) == 0, fmt.Sprintf("alerts %+v", as)
	})
	r.stop(t)
	var got *Alert
	for _, q := range peer.accepted() {
		var as []Alert
		if err := json.Unmarshal(q.body, &as); err != nil {
			t.Fatalf("peer got %s: %v", q.body, err)
		}
		for i := range as {
			if as[i].Annotations["seq"] == "2" {
				got = &as[i]
			}
		}
	}
	if got == nil {
		t.Fatal("the Alertmanagers were sent no resolution of the seed alert")
	}
	if !got.EndsAt.Equal(resolved.ResolvedAt) || got.Labels["batch_id"] != "20260930" || got.Labels["status"] != "late" {
		t.Errorf("resolution sent: endsAt %s labels %v; want endsAt %s under the labels it fired with", got.EndsAt, got.Labels, resolved.ResolvedAt)
	}
	if got.Annotations["superseded_by"] != rerun.String() || got.Annotations["resolution"] != "superseded by "+rerun.String() {
		t.Errorf("resolution annotations %v: want superseded_by %s and its resolution", got.Annotations, rerun)
	}
}

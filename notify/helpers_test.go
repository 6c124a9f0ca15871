package notify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

const seedPipeline = "account-balance-snapshot.daily"

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// story is what the detect engine publishes for the seed case under a
// pipeline name of the test's own (so tests sharing one Alertmanager and
// one broker do not see each other's alerts): the open record of the
// stalled batch, then the records of the repair that delivers it.
type story struct {
	pipeline string
	open     detect.Finding
	records  [][]byte // every record, in publication order (open first)
}

// seedStory runs analyzer/detect over deploy/demo/seed-case.jsonl and the
// seed contract, renamed to pipeline: advanced to 22:15 (15 minutes past
// the signal_delivered deadline) it raises the seed finding; the signal
// restored, the batch identified and consumed, it resolves it.
func seedStory(t *testing.T, pipeline string) story {
	t.Helper()
	ydata, err := os.ReadFile("../deploy/contracts/" + seedPipeline + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := contract.LoadFS(fstest.MapFS{pipeline + ".yaml": {Data: bytes.ReplaceAll(ydata, []byte(seedPipeline), []byte(pipeline))}}, pipeline+".yaml")
	if err != nil {
		t.Fatalf("seed contract renamed to %s: %v", pipeline, err)
	}
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	edata, err := os.ReadFile("../deploy/demo/seed-case.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var dec model.Decoder
	observe := func(line []byte) {
		t.Helper()
		e, err := dec.Decode(bytes.ReplaceAll(line, []byte(seedPipeline), []byte(pipeline)))
		if err != nil {
			t.Fatalf("event %s: %v", line, err)
		}
		d.Observe(&e)
	}
	sc := bufio.NewScanner(bytes.NewReader(edata))
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			observe(sc.Bytes())
		}
	}
	s := story{pipeline: pipeline}
	first := d.Advance(at("2026-09-30T22:15:30Z"), at("2026-09-30T22:15:00Z"))
	if len(first) != 1 || first[0].Name != "signal_delivered" || first[0].State != detect.Open {
		t.Fatalf("seed case under %s: %d findings at 22:15, want the open signal_delivered one", pipeline, len(first))
	}
	s.open = first[0]
	s.records = append(s.records, first[0].AppendJSON(nil))
	for _, e := range []string{
		`{"spec":"handoff/v1","event_id":"fix-1","type":"signal.restored","time":"2026-10-01T00:40:00.000Z","pipeline":"P","business_date":"2026-09-30","batch_id":"20260930","system":"operator","component":"handoff-restore","object":"account_balance_snapshot_20260930.flag","rows":120345}`,
		`{"spec":"handoff/v1","event_id":"fix-2","type":"batch.identified","time":"2026-10-01T00:41:00.000Z","pipeline":"P","business_date":"2026-09-30","batch_id":"20260930","system":"consumer","component":"consume-runner-1"}`,
		`{"spec":"handoff/v1","event_id":"fix-3","type":"consume.succeeded","time":"2026-10-01T00:47:00.000Z","pipeline":"P","business_date":"2026-09-30","batch_id":"20260930","system":"consumer","component":"consume-runner-1","rows":120345}`,
	} {
		observe([]byte(strings.ReplaceAll(e, `"pipeline":"P"`, `"pipeline":"`+seedPipeline+`"`)))
	}
	resolved := false
	for _, f := range d.Advance(at("2026-10-01T01:00:30Z"), at("2026-10-01T01:00:00Z")) {
		s.records = append(s.records, f.AppendJSON(nil))
		resolved = resolved || (f.Fingerprint == s.open.Fingerprint && f.State == detect.Resolved)
	}
	if !resolved {
		t.Fatalf("seed case under %s: the repair did not resolve the finding", pipeline)
	}
	return s
}

// publish writes records to topic keyed by their batch, as detect does,
// and waits for Kafka's acknowledgement.
func publish(t testing.TB, brokers []string, topic string, records ...[]byte) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	msgs := make([]kafka.Message, len(records))
	for i, r := range records {
		f, err := detect.ParseFinding(r)
		if err != nil {
			msgs[i] = kafka.Message{Key: []byte("not-a-finding"), Value: r}
			continue
		}
		msgs[i] = kafka.Message{Key: []byte(f.Batch.String()), Value: r}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("publish %d findings to %s: %v", len(records), topic, err)
	}
}

// testConfig is a configuration on the test's own topics and group, with
// leases and retries in seconds.
func testConfig(t testing.TB) Config {
	brokers := testenv.KafkaBrokers(t)
	return Config{
		Kafka: cliflag.Kafka{Brokers: brokers, Topic: "handoff.events", Partitions: 3, Replication: 1}, FindingsTopic: testenv.Topic(t, brokers, "notify_findings"), DLQTopic: testenv.Topic(t, brokers, "notify_dlq"), StateTopic: testenv.Topic(t, brokers, "notify_state"),
		Group:    testenv.Name("notify"),
		ServeURL: "http://127.0.0.1:8080", WebhookSecret: "s3cret",
		Lease: 3 * time.Second, Resend: time.Second,
		RetryFor: 20 * time.Second, RetryMax: 500 * time.Millisecond, RequestTimeout: 5 * time.Second,
	}
}

// running is a notifier running in the background.
type running struct {
	n      *Notifier
	cancel context.CancelFunc
	done   chan error
}

func start(t testing.TB, cfg Config) *running {
	t.Helper()
	return startWith(t, cfg, Options{})
}

// startWith is start with options (a logger, a clock).
func startWith(t testing.TB, cfg Config, opts Options) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := New(ctx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &running{n: n, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- n.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends Run (a graceful stop) and closes the notifier; a second call
// does nothing.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30s after its context ended")
	}
	if err := r.n.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// amAlert is an alert as Alertmanager's GET /api/v2/alerts returns it.
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	UpdatedAt   time.Time         `json:"updatedAt"`
	Fingerprint string            `json:"fingerprint"`
	Status      struct {
		State      string   `json:"state"`
		SilencedBy []string `json:"silencedBy"`
	} `json:"status"`
}

// amAlerts returns Alertmanager's alerts of pipeline (active, silenced and
// inhibited; Alertmanager lists no resolved alert).
func amAlerts(t *testing.T, am, pipeline string) []amAlert {
	t.Helper()
	q := url.Values{"filter": {`pipeline="` + pipeline + `"`}}
	resp, err := http.Get(am + "/api/v2/alerts?" + q.Encode())
	if err != nil {
		t.Fatalf("GET %s/api/v2/alerts: %v", am, err)
	}
	defer resp.Body.Close()
	var out []amAlert
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s/api/v2/alerts: %s %s", am, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode alerts: %v", err)
	}
	return out
}

// amSilence silences every alert of pipeline for an hour and returns the
// silence id; the silence is expired at cleanup.
func amSilence(t *testing.T, am, pipeline string) string {
	t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"matchers":  []map[string]any{{"name": "pipeline", "value": pipeline, "isRegex": false, "isEqual": true}},
		"startsAt":  now.Add(-time.Second),
		"endsAt":    now.Add(time.Hour),
		"createdBy": "handoff notify test",
		"comment":   "maintenance of " + pipeline,
	})
	resp, err := http.Post(am+"/api/v2/silences", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST silence: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.SilenceID == "" {
		t.Fatalf("POST silence: %s, %v", resp.Status, err)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, am+"/api/v2/silence/"+out.SilenceID, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return out.SilenceID
}

// recorder is an HTTP endpoint that records every request body and can be
// told to fail: it answers fail(n) for the n-th request (from 1).
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
	fail func(n int) int // status to answer; 0 or 2xx: accept
}

type recorded struct {
	body      []byte
	header    http.Header
	status    int
	receiptAt time.Time
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	status := 200
	if r.fail != nil {
		if s := r.fail(len(r.reqs) + 1); s != 0 {
			status = s
		}
	}
	r.reqs = append(r.reqs, recorded{body: b, header: req.Header.Clone(), status: status, receiptAt: time.Now()})
	r.mu.Unlock()
	w.WriteHeader(status)
	fmt.Fprintf(w, "status %d\n", status)
}

// accepted returns the requests answered with 2xx, in order.
func (r *recorder) accepted() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, q := range r.reqs {
		if q.status/100 == 2 {
			out = append(out, q)
		}
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// logLines is a JSON slog handler's output, safe for the notifier's
// concurrent deliveries.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns every decoded log line.
func (l *logLines) lines(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(l.buf.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %s: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// about returns the decoded lines whose fingerprint is fp.
func (l *logLines) about(t testing.TB, fp string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range l.lines(t) {
		if m["fingerprint"] == fp {
			out = append(out, m)
		}
	}
	return out
}

package live_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/ingest/results"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconfig"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/prometheus/client_golang/prometheus"
)

// env is one test's private topics, groups and database on the real
// services, with handoff ingest (events and results) running in-process.
type env struct {
	brokers []string
	conn    driver.Conn
	db      string
	pre     string // prefix of the test's topic names
	cfg     live.Config
	// contracts are the detector's (the seed's unless a test sets them).
	contracts detect.Contracts
}

func newEnv(t *testing.T) *env { return newEnvParts(t, 3) }

// newEnvParts is newEnv with topics of the given number of partitions.
func newEnvParts(t *testing.T, parts int) *env {
	t.Helper()
	e := newEnvWithoutIngestParts(t, parts)
	e.startIngest(t, e.pre)
	return e
}

// newEnvWithoutIngest is newEnv before handoff ingest starts: the topics
// exist, the database does not.
func newEnvWithoutIngest(t *testing.T) *env { return newEnvWithoutIngestParts(t, 3) }

// newEnvWithoutIngestParts is newEnvWithoutIngest with topics of the given
// number of partitions.
func newEnvWithoutIngestParts(t *testing.T, parts int) *env {
	t.Helper()
	e := &env{brokers: testenv.KafkaBrokers(t), conn: testenv.ClickHouse(t), contracts: seedContracts(t)}
	e.db = testenv.Database(t, e.conn, "detect")
	pre := "test." + e.db + "."
	e.cfg = live.Config{
		Kafka: cliflag.Kafka{Brokers: e.brokers, Topic: pre + "events", Partitions: parts, Replication: 1}, FindingsTopic: pre + "findings",
		Group: e.db + "-detect", IngestGroup: e.db + "-ingest", ResultsGroup: e.db + "-results",
		ClickHouse: chconfig.Service{Addr: testenv.ClickHouseAddr(t), Database: e.db, User: "default"},
		ExpectFrom: "2026-09-29", RetainDays: 35, Tick: 100 * time.Millisecond, Heartbeat: time.Hour,
		Instance: "test", SessionTimeout: 6 * time.Second,
	}
	e.pre = pre
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := []string{e.cfg.Kafka.Topic, e.cfg.FindingsTopic, pre + "dlq", pre + "diagnoses"}
	var specs []topics.Spec
	for _, n := range all {
		specs = append(specs, topics.Spec{Name: n, Partitions: parts})
	}
	if err := topics.Ensure(ctx, e.brokers, specs...); err != nil {
		t.Fatal(err)
	}
	testenv.Topics(t, e.brokers, pre)
	return e
}

// startIngest runs handoff ingest's two consumers, as the command does.
func (e *env) startIngest(t *testing.T, pre string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ccfg := consumer.Config{
		Kafka: e.cfg.Kafka, DLQTopic: pre + "dlq", Group: e.cfg.IngestGroup, ClickHouse: e.cfg.ClickHouse,
		Compression: "none", BatchSize: 1000, BatchBytes: 16 << 20, FlushInterval: 100 * time.Millisecond,
		RetryMax: time.Second, SessionTimeout: 6 * time.Second, ShutdownTimeout: 20 * time.Second,
	}
	c, err := consumer.New(ctx, ccfg, consumer.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	rcfg := results.Config{
		FindingsTopic: e.cfg.FindingsTopic, DiagnosesTopic: pre + "diagnoses", Group: e.cfg.ResultsGroup,
		BatchSize: 500, BatchBytes: results.MaxRecordBytes, FlushInterval: 100 * time.Millisecond,
		Brokers: e.brokers, DLQTopic: pre + "dlq", Database: e.db, Partitions: e.cfg.Kafka.Partitions, ReplicationFactor: 1,
		RetryMax: time.Second, SessionTimeout: 6 * time.Second, ShutdownTimeout: 20 * time.Second,
	}
	rc, err := results.New(ctx, rcfg, results.Options{Conn: e.conn})
	if err != nil {
		cancel()
		c.Close()
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { c.Run(ctx); done <- struct{}{} }()
	go func() { rc.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Errorf("ingest did not stop within a minute")
				return
			}
		}
		c.Close()
		rc.Close()
	})
}

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root not found")
		}
		dir = parent
	}
}

func seedContracts(t *testing.T) *contract.Set {
	t.Helper()
	p := repoFile(t, "deploy/contracts/account-balance-snapshot.daily.yaml")
	set, err := contract.LoadFS(os.DirFS(filepath.Dir(p)), filepath.Base(p))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func (e *env) publishLines(t *testing.T, lines ...string) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Topic: e.cfg.Kafka.Topic, Balancer: &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	var dec model.Decoder
	msgs := make([]kafka.Message, 0, len(lines))
	for _, l := range lines {
		ev, err := dec.Decode([]byte(l))
		if err != nil {
			t.Fatalf("seed line %q: %v", l, err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(ev.PartitionKey()), Value: []byte(l)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

func seedLines(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(repoFile(t, "deploy/demo/seed-case.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// detector runs one handoff detect instance with a fixed clock; stop ends it.
type detector struct {
	r    *live.Runner
	reg  *prometheus.Registry
	stop func()
}

// lagPartitions returns the partitions d's consumer-lag gauge has a value
// for, sorted.
func (d *detector) lagPartitions(t *testing.T) []string {
	t.Helper()
	mfs, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != "handoff_detect_consumer_lag" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "partition" {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func (e *env) startDetector(t *testing.T, now time.Time) *detector {
	t.Helper()
	return e.startDetectorLog(t, now, nil)
}

// syncBuffer is a log destination tests can read while the detector writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (e *env) startDetectorLog(t *testing.T, now time.Time, logTo *syncBuffer) *detector {
	t.Helper()
	return e.startDetectorClockLog(t, func() time.Time { return now }, logTo)
}

// startDetectorClock runs one handoff detect instance with the clock now.
func (e *env) startDetectorClock(t *testing.T, now func() time.Time) *detector {
	t.Helper()
	return e.startDetectorClockLog(t, now, nil)
}

// startDetectorClockLog runs one handoff detect instance with the clock
// now, logging to logTo when it is set.
func (e *env) startDetectorClockLog(t *testing.T, now func() time.Time, logTo *syncBuffer) *detector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *live.Runner, 1)
	done := make(chan error, 1)
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("HANDOFF_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if logTo != nil {
		log = slog.New(slog.NewTextHandler(logTo, nil))
	}
	reg := prometheus.NewRegistry()
	go func() {
		done <- live.Run(ctx, e.cfg, live.RunOptions{
			Contracts: e.contracts, Logger: log, Now: now, Registry: reg,
			Started: func(r *live.Runner) { started <- r },
		})
	}()
	d := detector{reg: reg}
	select {
	case d.r = <-started:
	case err := <-done:
		cancel()
		t.Fatalf("detect stopped before starting: %v", err)
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("detect did not start within a minute")
	}
	stopped := false
	d.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("detect: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("detect did not stop within a minute")
		}
	}
	t.Cleanup(d.stop)
	return &d
}

// caughtUp waits until the detector has advanced with its watermark at now.
func (d *detector) caughtUp(t *testing.T, now time.Time) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, "the detector's evidence catches up with its clock", func() (bool, string) {
		n, safe, pub := d.r.Progress()
		return n > 0 && !safe.Before(now), fmt.Sprintf("advances %d, safe %v, published %d", n, safe, pub)
	})
}

type row struct {
	batch, kind, name, state, status, verdict string
	seq                                       uint32
	lateness                                  int64
}

// findings reads every stored finding record, in a stable order.
func (e *env) findings(t *testing.T) []row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := e.conn.Query(ctx, "SELECT DISTINCT batch, kind, name, toString(state), status, verdict, seq, lateness_ms FROM "+e.db+"."+schema.Findings)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.batch, &r.kind, &r.name, &r.state, &r.status, &r.verdict, &r.seq, &r.lateness); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		return fmt.Sprint(out[i]) < fmt.Sprint(out[j])
	})
	return out
}

func (e *env) waitFindings(t *testing.T, what string, want int) []row {
	t.Helper()
	var got []row
	testenv.Eventually(t, 2*time.Minute, what, func() (bool, string) {
		got = e.findings(t)
		return len(got) == want, fmt.Sprintf("%d stored finding records, want %d: %v", len(got), want, got)
	})
	return got
}

// TestDetectSeedLifecycle runs the seed case through real Kafka, ingest,
// ClickHouse and handoff detect: the 2026-09-30 batch raises signal_delivered
// overdue (not_identified), 2026-09-29 raises nothing, the expected batch
// 2026-10-01 that never showed up is found; a restart publishes nothing
// twice; the late delivery resolves the finding and keeps how late it was.
func TestDetectSeedLifecycle(t *testing.T) {
	e := newEnv(t)
	e.publishLines(t, seedLines(t)...)
	now := time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)

	d := e.startDetector(t, now)
	d.caughtUp(t, now)
	got := e.waitFindings(t, "the seed's findings stored", 2)
	want := []row{
		{batch: "account-balance-snapshot.daily/2026-09-30/20260930", kind: "overdue", name: "signal_delivered", state: "open", status: "late", verdict: "not_identified", seq: 1},
		{batch: "account-balance-snapshot.daily/2026-10-01/20261001", kind: "missing", name: "not_produced", state: "open", status: "late", verdict: "not_produced", seq: 1},
	}
	assertRows(t, got, want)

	// A restart rebuilds the state from ClickHouse and publishes nothing
	// that was published before.
	d.stop()
	d2 := e.startDetector(t, now)
	d2.caughtUp(t, now)
	if _, _, pub := d2.r.Progress(); pub != 0 {
		t.Fatalf("the restarted detector published %d findings, want none", pub)
	}
	assertRows(t, e.findings(t), want)

	// The signal arrives late, the consumer consumes: the finding resolves
	// and keeps its lateness (2026-10-02T10:00Z - due 2026-09-30T22:00Z = 36h).
	const tmpl = `{"spec":"handoff/v1","event_id":"late-%s","type":"%s","time":"%s","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"%s"%s}`
	e.publishLines(t,
		fmt.Sprintf(tmpl, "1", "signal.transferred", "2026-10-02T10:00:00Z", "exchange", `,"object":"account_balance_snapshot_20260930.flag"`),
		fmt.Sprintf(tmpl, "2", "batch.identified", "2026-10-02T10:05:00Z", "consumer", ""),
		fmt.Sprintf(tmpl, "3", "consume.succeeded", "2026-10-02T10:20:00Z", "consumer", `,"rows":120345`),
	)
	// The delivery also proves consumed, due 2026-09-30T23:00Z, late by
	// 35h20m: it was never the first missing boundary, so it is recorded
	// resolved at once, with its lateness (docs/detect.md).
	got = e.waitFindings(t, "the late delivery resolves the finding", 4)
	late := map[string]int64{}
	for _, r := range got {
		if r.state == "resolved" && r.batch == "account-balance-snapshot.daily/2026-09-30/20260930" && r.kind == "overdue" {
			late[r.name] = r.lateness
		}
	}
	wantLate := map[string]int64{
		"signal_delivered": (36 * time.Hour).Milliseconds(),
		"consumed":         (35*time.Hour + 20*time.Minute).Milliseconds(),
	}
	if fmt.Sprint(late) != fmt.Sprint(wantLate) {
		t.Fatalf("resolved lateness %v, want %v; records: %v", late, wantLate, got)
	}
	// Every finding record went out LZ4-compressed: a record carries its
	// batch's diagnosis, and after a fault there are hundreds of thousands.
	if c := testenv.Codecs(t, e.brokers, e.cfg.FindingsTopic); c["lz4"] != len(got) || len(c) != 1 {
		t.Fatalf("compression of the %d finding records: %v, want all lz4", len(got), c)
	}
}

func assertRows(t *testing.T, got, want []row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("findings:\n got %v\nwant %v", got, want)
	}
	for i := range want {
		g := got[i]
		g.lateness = 0
		if g != want[i] {
			t.Fatalf("finding %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// TestDetectWaitsForIngest: started before handoff ingest has created its
// database, the detector waits and retries instead of exiting, and raises
// the seed's findings once ingest runs.
func TestDetectWaitsForIngest(t *testing.T) {
	e := newEnvWithoutIngest(t)
	e.publishLines(t, seedLines(t)...)
	now := time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)
	var logs syncBuffer
	d := e.startDetectorLog(t, now, &logs)
	testenv.Eventually(t, time.Minute, "the detector retries reading a history that is not there yet", func() (bool, string) {
		l := logs.String()
		return strings.Contains(l, "retrying") && strings.Contains(l, "read the stored history"), l
	})
	e.startIngest(t, e.pre)
	d.caughtUp(t, now)
	got := e.waitFindings(t, "the seed's findings stored", 2)
	if got[0].name != "signal_delivered" || got[1].kind != "missing" {
		t.Fatalf("findings: %v", got)
	}
}

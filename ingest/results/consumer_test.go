package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

// testEnv is one integration test's unique database, topics and group on the
// real services.
type testEnv struct {
	brokers []string
	conn    driver.Conn
	cfg     Config
}

func newEnv(t *testing.T, name string) *testEnv {
	t.Helper()
	d := storetest.NewDB(t, name)
	e := &testEnv{brokers: testenv.KafkaBrokers(t), conn: d.Conn}
	db := d.Name
	e.cfg = Config{
		FindingsTopic: "test." + db + ".findings", DiagnosesTopic: "test." + db + ".diagnoses", Group: db,
		BatchSize: 500, BatchBytes: MaxRecordBytes, FlushInterval: 200 * time.Millisecond,
		Brokers: e.brokers, DLQTopic: "test." + db + ".dlq", Database: db, Partitions: 3, ReplicationFactor: 1,
		RetryMax: time.Second, SessionTimeout: 6 * time.Second, ShutdownTimeout: 20 * time.Second,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := []string{e.cfg.FindingsTopic, e.cfg.DiagnosesTopic, e.cfg.DLQTopic}
	var specs []topics.Spec
	for _, n := range all {
		specs = append(specs, topics.Spec{Name: n, Partitions: 3})
	}
	if err := topics.Ensure(ctx, e.brokers, specs...); err != nil {
		t.Fatal(err)
	}
	testenv.Topics(t, e.brokers, "test."+db+".")
	return e
}

// publish writes records to topic, keyed as the analyzer keys them (the
// batch key, or a given raw key).
func (e *testEnv) publish(t *testing.T, topic string, msgs ...kafka.Message) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Topic: topic, Balancer: &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchBytes: 2 * topics.MaxMessageBytes, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("publish to %s: %v", topic, err)
	}
}

// run starts a consumer; stop cancels it and returns Run's result.
func (e *testEnv) run(t *testing.T, cfg Config, beforeCommit func() error) (reg *prometheus.Registry, stop func() error) {
	t.Helper()
	return e.runOn(t, e.conn, cfg, beforeCommit)
}

// runOn is run with the ClickHouse connection conn.
func (e *testEnv) runOn(t *testing.T, conn driver.Conn, cfg Config, beforeCommit func() error) (reg *prometheus.Registry, stop func() error) {
	t.Helper()
	_, reg, stop = e.start(t, conn, cfg, beforeCommit)
	return reg, stop
}

// start is runOn, also returning the consumer.
func (e *testEnv) start(t *testing.T, conn driver.Conn, cfg Config, beforeCommit func() error) (c *Consumer, reg *prometheus.Registry, stop func() error) {
	t.Helper()
	reg = prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	c, err = New(ctx, cfg, Options{Conn: conn, Registry: reg})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c.beforeCommit = beforeCommit
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-done
		c.Close()
		return err
	}
	t.Cleanup(func() { stop() })
	return c, reg, stop
}

func (e *testEnv) count(t *testing.T, q string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n uint64
	if err := e.conn.QueryRow(ctx, strings.ReplaceAll(q, "{db}", e.cfg.Database)).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (e *testEnv) waitCount(t *testing.T, want uint64, q string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, q, func() (bool, string) {
		n := e.count(t, q)
		return n == want, fmt.Sprintf("%d, want %d", n, want)
	})
}

// records is a test load: diagnoses of generated batches and an open and
// a resolved finding for some of them, plus malformed records.
type records struct {
	diagnoses, findings []kafka.Message
	resolved            int               // findings whose latest state is resolved
	lifecycle           int               // of them, records with resolution, superseded_by and reporting delay
	bad                 map[string]string // key -> reason, the malformed records
	badDiag, badFind    []kafka.Message

	// partitioned and partitionSum: the records with a valid events
	// partition header (of 6), and the sum of their partitions; the
	// others have none or one that does not parse.
	partitioned, partitionSum int
}

func load(t *testing.T, pipeline string, n int) records {
	t.Helper()
	var r records
	r.bad = map[string]string{}
	for i, d := range diagnosisRecords(t, n, pipeline) {
		p, err := ParseDiagnosis(d)
		if err != nil {
			t.Fatal(err)
		}
		key := []byte(p.Key.String())
		r.diagnoses = append(r.diagnoses, kafka.Message{Key: key, Value: d})
		if i%3 == 0 {
			raised := asOf.Add(-time.Duration(i) * time.Minute)
			m := kafka.Message{Key: key, Value: findingRecord(t, d, "overdue", "consumed", stateOpen, 1, raised, 0)}
			switch i % 9 {
			case 0:
				p := (i / 9) % 6
				m.Headers = []kafka.Header{{Key: "other", Value: []byte("1/2")},
					{Key: schema.EventsPartitionHeader, Value: schema.AppendEventsPartition(nil, p, 6)}}
				r.partitioned++
				r.partitionSum += p
			case 3:
				m.Headers = []kafka.Header{{Key: schema.EventsPartitionHeader, Value: []byte("6/6")}}
			}
			r.findings = append(r.findings, m)
			if i%2 == 0 {
				rec := findingRecord(t, d, "overdue", "consumed", stateResolved, 2, raised, time.Duration(i)*time.Second)
				if i%4 == 0 {
					// Ended the other ways: superseded by a re-run of the
					// date, or on time and reported late.
					rerun := strconv.Quote(p.Key.String() + "-r2")
					rec = withField(t, withField(t, withField(t, rec, "superseded_by", rerun), "resolution", `"superseded by `+rerun[1:]),
						"reporting_delay_ms", strconv.Itoa(1000+i))
					r.lifecycle++
				}
				r.findings = append(r.findings, kafka.Message{Key: key, Value: rec})
				r.resolved++
			}
		}
	}
	// The seed's findings as the detector writes them.
	for _, rec := range detectRecords(t) {
		f, err := ParseFinding(rec)
		if err != nil {
			t.Fatal(err)
		}
		r.findings = append(r.findings, kafka.Message{Key: []byte(f.Key.String()), Value: rec})
	}
	d0 := r.diagnoses[0].Value
	f0 := r.findings[0].Value
	for _, b := range []struct {
		key, reason string
		finding     bool
		value       []byte
	}{
		{"bad-json", "bad_json", false, []byte(`{"batch":`)},
		{"bad-status", "bad_value", false, withField(t, d0, "status", `"fine"`)},
		{"no-as-of", "missing_field", false, withField(t, d0, "as_of", "")},
		{"bad-state", "bad_value", true, withField(t, f0, "state", `"firing"`)},
		{"empty", "bad_json", true, []byte{}},
	} {
		m := kafka.Message{Key: []byte(b.key), Value: b.value}
		if b.finding {
			r.badFind = append(r.badFind, m)
		} else {
			r.badDiag = append(r.badDiag, m)
		}
		r.bad[b.key] = b.reason
	}
	return r
}

// TestStoreExactlyOnce publishes every finding and diagnosis twice (a
// publisher retrying) with malformed records among them: each record is
// stored once (count FINAL, distinct keys), the latest state of each
// finding reads back without FINAL, the malformed ones are dead letters
// with their reasons, and every offset is committed.
func TestStoreExactlyOnce(t *testing.T) {
	e := newEnv(t, "results_once")
	r := load(t, "pipe.once", 1200)
	e.publish(t, e.cfg.DiagnosesTopic, append(append(r.diagnoses, r.badDiag...), r.diagnoses...)...)
	e.publish(t, e.cfg.FindingsTopic, append(append(r.findings, r.badFind...), r.findings...)...)

	c, stop := e.run(t, e.cfg, nil)
	nd, nf := uint64(len(r.diagnoses)), uint64(len(r.findings))
	e.waitCount(t, nd, "SELECT count() FROM {db}.diagnoses_v2 FINAL")
	e.waitCount(t, nf, "SELECT count() FROM {db}.findings_v2 FINAL")
	e.waitCount(t, uint64(len(r.bad)), "SELECT count() FROM {db}.dead_letters FINAL")
	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if n := e.uncommitted(t); n != 0 {
		t.Errorf("%d records uncommitted after a graceful stop", n)
	}

	if n := e.count(t, "SELECT uniqExact(batch, as_of_ms) FROM {db}.diagnoses_v2"); n != nd {
		t.Errorf("distinct diagnoses = %d, want %d", n, nd)
	}
	if n := e.count(t, "SELECT uniqExact(fingerprint, seq) FROM {db}.findings_v2"); n != nf {
		t.Errorf("distinct finding records = %d, want %d", n, nf)
	}
	// Latest state per fingerprint, without FINAL (docs/ingest.md).
	if n := e.count(t, `SELECT count() FROM (SELECT fingerprint, argMax(state, seq) AS s
		FROM {db}.findings_v2 GROUP BY fingerprint) WHERE s = 'resolved'`); n != uint64(r.resolved) {
		t.Errorf("fingerprints whose latest state is resolved = %d, want %d", n, r.resolved)
	}
	if n := e.count(t, `SELECT count() FROM {db}.findings_v2 WHERE state = 'resolved' AND lateness_ms > 0 AND resolved_ms > raised_ms
		AND labels.value[indexOf(labels.key, 'team')] = 'ledger' AND diagnosis LIKE '{"batch":%' AND status != ''`); n == 0 {
		t.Error("resolved findings lost lateness, resolved_ms, labels or the diagnosis")
	}
	if n := e.count(t, `SELECT count() FROM {db}.findings_v2 FINAL WHERE state = 'resolved' AND reporting_delay_ms >= 1000
		AND resolution = concat('superseded by ', superseded_by) AND superseded_by = concat(batch, '-r2')`); n != uint64(r.lifecycle) {
		t.Errorf("records stored with their reporting delay, resolution and superseded_by = %d, want %d", n, r.lifecycle)
	}
	// The events partition of each record's header, stored; 0 of 0 for
	// a record without one or with one that does not parse.
	if n := e.count(t, "SELECT count() FROM {db}.findings_v2 FINAL WHERE events_partitions = 6"); n != uint64(r.partitioned) || n == 0 {
		t.Errorf("records stored with their events partition = %d, want %d", n, r.partitioned)
	}
	if n := e.count(t, "SELECT toUInt64(sum(events_partition)) FROM {db}.findings_v2 FINAL WHERE events_partitions = 6"); n != uint64(r.partitionSum) {
		t.Errorf("sum of the stored events partitions = %d, want %d", n, r.partitionSum)
	}
	if n := e.count(t, "SELECT count() FROM {db}.findings_v2 FINAL WHERE events_partitions = 0 AND events_partition = 0"); n != nf-uint64(r.partitioned) {
		t.Errorf("records stored without an events partition = %d, want %d", n, nf-uint64(r.partitioned))
	}
	for key, reason := range r.bad {
		q := fmt.Sprintf("SELECT count() FROM {db}.dead_letters WHERE key = '%s' AND reason = '%s' AND error != ''", key, reason)
		if n := e.count(t, q); n == 0 {
			t.Errorf("dead letter %s with reason %s missing", key, reason)
		}
	}
	// The dead-letter topic has each malformed record, unchanged, with the
	// reason and where it was read.
	dl := e.readDLQ(t, len(r.bad))
	for _, m := range dl {
		h := map[string]string{}
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		key := string(m.Key)
		if h[deadletter.HeaderReason] != r.bad[key] || h[deadletter.HeaderError] == "" ||
			(h[deadletter.HeaderSourceTopic] != e.cfg.FindingsTopic && h[deadletter.HeaderSourceTopic] != e.cfg.DiagnosesTopic) {
			t.Errorf("dead-letter message %s: headers %v, want reason %s and a source topic", key, h, r.bad[key])
		}
		if key != "empty" && key != "bad-json" && len(m.Value) == 0 {
			t.Errorf("dead letter %s lost its value", key)
		}
	}
	// kafka-go's reader returns nil for an empty value too: the protocol
	// level tells an empty value from a null one (a tombstone).
	if null := e.dlqValueNull(t, "empty"); null {
		t.Error("dead letter of the empty record is a tombstone (null value), want the empty value received")
	}
	// Metrics: every record counted per topic (both copies), rejections by
	// topic and reason, nothing left behind.
	for topic, want := range map[string]int{e.cfg.DiagnosesTopic: 2 * len(r.diagnoses), e.cfg.FindingsTopic: 2 * len(r.findings)} {
		if got := value(t, c, "handoff_ingest_results_stored_total", "topic", topic); got != float64(want) {
			t.Errorf("stored_total{topic=%s} = %v, want %d", topic, got, want)
		}
		if got := value(t, c, "handoff_ingest_results_consumer_lag", "topic", topic); got != 0 {
			t.Errorf("consumer_lag{topic=%s} = %v after a graceful stop, want 0", topic, got)
		}
	}
	if got := value(t, c, "handoff_ingest_results_rejected_total", "topic", e.cfg.FindingsTopic, "reason", "bad_value"); got != 1 {
		t.Errorf("rejected_total{findings, bad_value} = %v, want 1", got)
	}
}

// TestCrashBeforeCommit stops a consumer as a crash would, after its
// INSERTs were acknowledged and before its offsets were committed. The next
// consumer of the group reads the same records again and stores them again:
// nothing reads twice (count FINAL and distinct keys), nothing is lost.
func TestCrashBeforeCommit(t *testing.T) {
	e := newEnv(t, "results_crash")
	r := load(t, "pipe.crash", 600)
	cfg := e.cfg
	// One batch of exactly every record: all of it is stored before the
	// crash, whatever the fetch timing.
	cfg.BatchSize = len(r.diagnoses) + len(r.findings)
	cfg.FlushInterval = 5 * time.Minute
	e.publish(t, cfg.DiagnosesTopic, r.diagnoses...)
	e.publish(t, cfg.FindingsTopic, r.findings...)
	nd, nf := uint64(len(r.diagnoses)), uint64(len(r.findings))

	crash := errors.New("crash before commit")
	_, stop := e.run(t, cfg, func() error { return crash })
	e.waitCount(t, nd, "SELECT count() FROM {db}.diagnoses_v2")
	e.waitCount(t, nf, "SELECT count() FROM {db}.findings_v2")
	if err := stop(); !errors.Is(err, crash) {
		t.Fatalf("first consumer: Run returned %v, want the crash", err)
	}

	second, stop := e.run(t, cfg, nil)
	testenv.Eventually(t, 2*time.Minute, "the second consumer read every record again", func() (bool, string) {
		d := value(t, second, "handoff_ingest_results_stored_total", "topic", cfg.DiagnosesTopic)
		f := value(t, second, "handoff_ingest_results_stored_total", "topic", cfg.FindingsTopic)
		return d == float64(nd) && f == float64(nf), fmt.Sprintf("stored %v diagnoses, %v findings", d, f)
	})
	if err := stop(); err != nil {
		t.Fatalf("second consumer: %v", err)
	}
	if n := e.uncommitted(t); n != 0 {
		t.Errorf("%d records uncommitted after the second consumer's graceful stop", n)
	}
	if n := e.count(t, "SELECT count() FROM {db}.diagnoses_v2 FINAL"); n != nd {
		t.Errorf("diagnoses FINAL = %d, want %d", n, nd)
	}
	if n := e.count(t, "SELECT uniqExact(batch, as_of_ms) FROM {db}.diagnoses_v2"); n != nd {
		t.Errorf("distinct diagnoses = %d, want %d", n, nd)
	}
	if n := e.count(t, "SELECT count() FROM {db}.findings_v2 FINAL"); n != nf {
		t.Errorf("findings FINAL = %d, want %d", n, nf)
	}
	// The latest-state read needs no FINAL: as many fingerprints as before.
	if n := e.count(t, "SELECT count() FROM (SELECT fingerprint FROM {db}.findings_v2 GROUP BY fingerprint)"); n != uint64(len(r.findings)-r.resolved) {
		t.Errorf("fingerprints = %d, want %d", n, len(r.findings)-r.resolved)
	}

	// Everything is committed now: a third consumer stores nothing. It is
	// stopped once it has joined and fetched (its lag gauge is set on
	// fetch, so a zero-record run is told apart by the stored counter).
	third, stop := e.run(t, e.cfg, nil)
	e.publish(t, cfg.DiagnosesTopic, r.diagnoses[0])
	testenv.Eventually(t, 2*time.Minute, "the third consumer stored the one new record", func() (bool, string) {
		d := value(t, third, "handoff_ingest_results_stored_total", "topic", cfg.DiagnosesTopic)
		return d >= 1, fmt.Sprintf("stored %v", d)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := e.uncommitted(t); n != 0 {
		t.Errorf("%d records uncommitted after the third consumer's graceful stop", n)
	}
	if d := value(t, third, "handoff_ingest_results_stored_total", "topic", cfg.DiagnosesTopic); d != 1 {
		t.Errorf("third consumer stored %v diagnoses, want only the 1 new one (the rest was committed)", d)
	}
}

// TestBatchBytes: records are stored when a batch reaches its byte bound,
// not only its count, so a few large diagnoses cannot pile up in memory.
func TestBatchBytes(t *testing.T) {
	e := newEnv(t, "results_bytes")
	cfg := e.cfg
	cfg.BatchSize = 1000
	cfg.BatchBytes = MaxRecordBytes // 4 MiB
	cfg.FlushInterval = 10 * time.Minute
	cfg.Partitions = 1
	d := diagnosisRecords(t, 40, "pipe.bytes")[0]
	p, _ := ParseDiagnosis(d)
	// Ten valid diagnoses of ~1 MiB each (an unknown field pads them), at
	// ten as-of times: four fill a batch.
	pad := strings.Repeat("x", 1<<20-len(d)+100)
	var msgs []kafka.Message
	for i := 0; i < 10; i++ {
		v := withField(t, d, "as_of", fmt.Sprintf(`"2026-10-05T00:00:%02dZ"`, i))
		v = withField(t, v, "padding", `"`+pad+`"`)
		msgs = append(msgs, kafka.Message{Key: []byte(p.Key.String()), Value: v})
	}
	for _, m := range msgs { // one by one: ten together are over the topic's max.message.bytes
		e.publish(t, cfg.DiagnosesTopic, m)
	}
	c, stop := e.run(t, cfg, nil)
	e.waitCount(t, 8, "SELECT count() FROM {db}.diagnoses_v2")
	// The last two stay in the open batch until shutdown: stop only once
	// the consumer has taken all ten into it (a record still queued in the
	// reader at the stop stays uncommitted, for the next start).
	testenv.Eventually(t, time.Minute, "the consumer read all ten diagnoses", func() (bool, string) {
		n := value(t, c, "handoff_ingest_results_read_total", "topic", cfg.DiagnosesTopic)
		return n >= 10, fmt.Sprintf("%v read", n)
	})
	if got := value(t, c, "handoff_ingest_results_flushes_total", "trigger", "bytes"); got != 2 {
		t.Errorf("flushes by bytes = %v, want 2 (4 records of ~1 MiB each)", got)
	}
	if got := value(t, c, "handoff_ingest_results_flushes_total", "trigger", "size") + value(t, c, "handoff_ingest_results_flushes_total", "trigger", "age"); got != 0 {
		t.Errorf("flushes by size or age = %v, want 0", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, "SELECT count() FROM {db}.diagnoses_v2"); n != 10 {
		t.Errorf("after shutdown %d diagnoses stored, want 10", n)
	}
	if got := value(t, c, "handoff_ingest_results_flushes_total", "trigger", "shutdown"); got != 1 {
		t.Errorf("shutdown flushes = %v, want 1", got)
	}
}

// value reads one series of a counter or gauge from reg: name and label
// name/value pairs.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// uncommitted returns how many records of the findings and diagnoses
// topics the group has not committed.
func (e *testEnv) uncommitted(t *testing.T) int64 {
	t.Helper()
	return testenv.Uncommitted(t, e.brokers, e.cfg.Group, e.cfg.FindingsTopic, e.cfg.DiagnosesTopic)
}

// TestLagWhileHeld: records fetched but not yet stored and committed show
// as lag (from the high watermark), not only after a commit: held in the
// commit step here, as while ClickHouse is down. After the commit the lag
// is 0.
func TestLagWhileHeld(t *testing.T) {
	e := newEnv(t, "results_lag")
	r := load(t, "pipe.lag", 300)
	cfg := e.cfg
	cfg.BatchSize = 1 << 20
	cfg.FlushInterval = time.Second
	e.publish(t, cfg.DiagnosesTopic, r.diagnoses...)
	hold, held, release := holdFirstCommit()
	reg, stop := e.run(t, cfg, hold)
	waitHeld(t, held)
	lag := value(t, reg, "handoff_ingest_results_consumer_lag", "topic", cfg.DiagnosesTopic)
	if lag <= 0 || lag > float64(len(r.diagnoses)) {
		t.Errorf("lag while a batch is held = %v, want between 1 and %d", lag, len(r.diagnoses))
	}
	close(release)
	testenv.Eventually(t, 2*time.Minute, "lag back to 0 after the commit", func() (bool, string) {
		l := value(t, reg, "handoff_ingest_results_consumer_lag", "topic", cfg.DiagnosesTopic)
		return l == 0, fmt.Sprintf("lag %v", l)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := e.uncommitted(t); n != 0 {
		t.Errorf("%d records uncommitted after a graceful stop", n)
	}
}

// TestLagAfterRebalance: a second consumer joins while the first holds a
// batch in its commit step. Each then counts only the partitions the group
// gives it (its lag no longer holds the last lag of a partition taken
// away, which it went on reporting before), and once everything is stored
// and committed the two lags are 0.
func TestLagAfterRebalance(t *testing.T) {
	e := newEnv(t, "results_lag_rebalance")
	r := load(t, "pipe.rebalance", 600)
	cfg := e.cfg
	cfg.BatchSize = 250
	cfg.FlushInterval = time.Second
	e.publish(t, cfg.DiagnosesTopic, r.diagnoses...)
	hold, held, release := holdFirstCommit()
	a, regA, stopA := e.start(t, e.conn, cfg, hold)
	waitHeld(t, held)
	b, regB, stopB := e.start(t, e.conn, cfg, nil)
	// The second has partitions once it stored records: the group
	// rebalanced while the first still holds its batch.
	testenv.Eventually(t, 2*time.Minute, "the second consumer stored records", func() (bool, string) {
		n := value(t, regB, "handoff_ingest_results_stored_total", "topic", cfg.DiagnosesTopic)
		return n > 0, fmt.Sprintf("%v stored", n)
	})
	all := []int{0, 1, 2}
	testenv.Eventually(t, 2*time.Minute, "the two consumers count disjoint partitions that together are all", func() (bool, string) {
		oa, ob := a.lag.Owned(), b.lag.Owned()
		for _, topic := range cfg.topics() {
			pa, pb := oa[topic], ob[topic]
			u := append(slices.Clone(pa), pb...)
			slices.Sort(u)
			if len(pa) == 0 || len(pb) == 0 || !slices.Equal(u, all) {
				return false, fmt.Sprintf("first %v, second %v", oa, ob)
			}
		}
		return true, ""
	})
	close(release)
	testenv.Eventually(t, 2*time.Minute, "every record committed", func() (bool, string) {
		n := e.uncommitted(t)
		return n == 0, fmt.Sprintf("%d uncommitted", n)
	})
	testenv.Eventually(t, 2*time.Minute, "both lags 0 once everything is committed", func() (bool, string) {
		la := value(t, regA, "handoff_ingest_results_consumer_lag", "topic", cfg.DiagnosesTopic)
		lb := value(t, regB, "handoff_ingest_results_consumer_lag", "topic", cfg.DiagnosesTopic)
		return la == 0 && lb == 0, fmt.Sprintf("first %v, second %v", la, lb)
	})
	for _, stop := range []func() error{stopB, stopA} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	e.waitCount(t, uint64(len(r.diagnoses)), "SELECT uniqExact(batch, as_of_ms) FROM {db}.diagnoses_v2")
}

// holdFirstCommit returns a beforeCommit hook that holds the first batch
// in the commit step (as while ClickHouse is down) until release is
// closed, and closes held when it does.
func holdFirstCommit() (hook func() error, held, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	return func() error {
		once.Do(func() { close(held) })
		<-release
		return nil
	}, held, release
}

// waitHeld waits for a batch to reach the held commit step.
func waitHeld(t *testing.T, held <-chan struct{}) {
	t.Helper()
	select {
	case <-held:
	case <-time.After(2 * time.Minute):
		t.Fatal("no batch reached the commit step within 2 minutes")
	}
}

// readDLQ reads n messages of the dead-letter topic from its start.
func (e *testEnv) readDLQ(t *testing.T, n int) []kafka.Message {
	t.Helper()
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, GroupID: e.cfg.Group + "_dlq_reader", Topic: e.cfg.DLQTopic,
		StartOffset: kafka.FirstOffset, MaxWait: 500 * time.Millisecond})
	defer rd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []kafka.Message
	for len(out) < n {
		m, err := rd.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("read dead-letter topic %s: %d of %d messages: %v", e.cfg.DLQTopic, len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// dlqValueNull finds the dead-letter record keyed key and reports whether
// its value is null (not merely empty).
func (e *testEnv) dlqValueNull(t *testing.T, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &kafka.Client{Addr: kafka.TCP(e.brokers...)}
	for p := 0; p < e.cfg.Partitions; p++ {
		res, err := c.Fetch(ctx, &kafka.FetchRequest{Topic: e.cfg.DLQTopic, Partition: p, Offset: 0, MinBytes: 1, MaxBytes: 32 << 20, MaxWait: 500 * time.Millisecond})
		if err != nil || res.Error != nil {
			t.Fatalf("fetch %s/%d: %v %v", e.cfg.DLQTopic, p, err, res.Error)
		}
		for {
			rec, err := res.Records.ReadRecord()
			if err != nil {
				break // io.EOF: end of what the broker returned
			}
			if rec.Key == nil {
				continue
			}
			k, _ := io.ReadAll(rec.Key)
			if string(k) == key {
				return rec.Value == nil
			}
		}
	}
	t.Fatalf("no dead-letter record keyed %q on %s", key, e.cfg.DLQTopic)
	return false
}

package consumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// setup holds the unique names of one test.
type setup struct {
	brokers []string
	chAddr  string
	conn    driver.Conn
	db      string
	topic   string
	dlq     string
	group   string
}

func newSetup(t testing.TB, name string) *setup {
	t.Helper()
	s := &setup{brokers: testenv.KafkaBrokers(t), chAddr: testenv.ClickHouseAddr(t), conn: testenv.ClickHouse(t)}
	s.db = testenv.Database(t, s.conn, name)
	s.topic = "test." + s.db
	s.dlq = s.topic + ".dlq"
	s.group = s.db
	testenv.Topics(t, s.brokers, s.topic)
	return s
}

func (s *setup) config() consumer.Config {
	return consumer.Config{
		Kafka:      cliflag.Kafka{Brokers: s.brokers, Topic: s.topic, Partitions: 4, Replication: 1},
		ClickHouse: chconfig.Service{Addr: s.chAddr, Database: s.db, User: "default"},
		DLQTopic:   s.dlq, Group: s.group,
		BatchSize: 1000, FlushInterval: 200 * time.Millisecond, RetryMax: time.Second,
		SessionTimeout: 6 * time.Second, ShutdownTimeout: 20 * time.Second,
	}
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("HANDOFF_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// start runs a consumer in the background; the returned stop cancels it and
// waits for Run's result.
func start(t *testing.T, cfg consumer.Config, opts consumer.Options) (c *consumer.Consumer, reg *prometheus.Registry, stop func() error) {
	t.Helper()
	reg = prometheus.NewRegistry()
	opts.Registry = reg
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nctx, ncancel := context.WithTimeout(ctx, time.Minute)
	defer ncancel()
	c, err := consumer.New(nctx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	var runErr error
	stop = func() error {
		if stopped {
			return runErr
		}
		stopped = true
		cancel()
		select {
		case runErr = <-done:
		case <-time.After(time.Minute):
			runErr = fmt.Errorf("consumer did not stop within a minute")
		}
		c.Close()
		return runErr
	}
	t.Cleanup(func() { stop() })
	return c, reg, stop
}

// writer returns a raw producer on topic. It has a transport of its own:
// kafka.DefaultTransport caches metadata, shared by every test of the
// process, that may predate the test's topics.
func writer(t testing.TB, brokers []string, topic string) *kafka.Writer {
	tr := &kafka.Transport{}
	w := &kafka.Writer{
		Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, BatchSize: 5000, BatchBytes: 16 << 20,
		Transport: tr,
	}
	t.Cleanup(func() { w.Close(); tr.CloseIdleConnections() })
	return w
}

// encode returns each event's message, every event twice, shuffled so that
// many arrive out of order.
func twiceShuffled(events []model.Event, seed int64) []kafka.Message {
	msgs := make([]kafka.Message, 0, 2*len(events))
	for i := range events {
		m := kafka.Message{Key: []byte(events[i].PartitionKey()), Value: events[i].AppendJSON(nil)}
		msgs = append(msgs, m, m)
	}
	r := rand.New(rand.NewSource(seed))
	r.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	return msgs
}

func produce(t testing.TB, w *kafka.Writer, msgs []kafka.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for len(msgs) > 0 {
		n := min(len(msgs), 5000)
		if err := w.WriteMessages(ctx, msgs[:n]...); err != nil {
			t.Fatalf("produce: %v", err)
		}
		msgs = msgs[n:]
	}
}

func count(t testing.TB, conn driver.Conn, query string, args ...any) uint64 {
	t.Helper()
	n, err := tryCount(conn, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func tryCount(conn driver.Conn, query string, args ...any) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n uint64
	err := conn.QueryRow(ctx, query, args...).Scan(&n)
	return n, err
}

// waitCount polls a count query until it equals want. A failing query is
// a "not yet" (the table may be about to be created).
func waitCount(t *testing.T, conn driver.Conn, timeout time.Duration, want uint64, query string, args ...any) {
	t.Helper()
	testenv.Eventually(t, timeout, fmt.Sprintf("%s = %d", query, want), func() (bool, string) {
		n, err := tryCount(conn, query, args...)
		if err != nil {
			return false, err.Error()
		}
		return n == want, fmt.Sprintf("got %d", n)
	})
}

// uncommitted returns, summed over the topic's partitions, how many
// messages the group has not committed.
func uncommitted(t *testing.T, brokers []string, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A transport of its own: kafka.DefaultTransport pools connections,
	// and a pooled connection to a broker that was restarted since
	// (TestKafkaDown) fails the next request with EOF.
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(meta.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	var parts []int
	var reqs []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		parts = append(parts, p.ID)
		reqs = append(reqs, kafka.LastOffsetOf(p.ID))
	}
	lo, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatalf("list offsets of %s: %v", topic, err)
	}
	end := map[int]int64{}
	for _, p := range lo.Topics[topic] {
		end[p.Partition] = p.LastOffset
	}
	of, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		t.Fatalf("committed offsets of group %s: %v", group, err)
	}
	var total int64
	for _, p := range of.Topics[topic] {
		c := p.CommittedOffset
		if c < 0 {
			c = 0
		}
		total += end[p.Partition] - c
	}
	return total
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				ok := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						ok = true
					}
				}
				if !ok {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// malformed returns one message per rejection reason, keyed by a name.
func malformed(pipeline string) (msgs []kafka.Message, want map[string]model.RejectKind) {
	good := model.Event{Spec: model.SpecV1, ID: "x", Type: model.JobSucceeded, Time: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		Pipeline: pipeline, BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930", System: model.Producer}
	js := string(good.AppendJSON(nil))
	big := strings.Replace(js, `"system":"producer"`, `"system":"producer","attrs":{"blob":"`+strings.Repeat("x", model.MaxEventSize)+`"}`, 1)
	cases := []struct {
		key   string
		value string
		kind  model.RejectKind
	}{
		{"bad-json", `{"spec":"handoff/v1","event_id":`, model.RejectBadJSON},
		{"not-object", `[1,2,3]`, model.RejectBadJSON},
		{"unknown-type", strings.Replace(js, `"job.succeeded"`, `"job.exploded"`, 1), model.RejectUnknownType},
		{"missing-field", strings.Replace(js, `"pipeline":"`+pipeline+`",`, "", 1), model.RejectMissingField},
		{"bad-date", strings.Replace(js, `"2026-09-30"`, `"2026-13-01"`, 1), model.RejectBadValue},
		{"bad-spec", strings.Replace(js, `"handoff/v1"`, `"handoff/v9"`, 1), model.RejectBadSpec},
		{"oversized", big, model.RejectTooLarge},
		{"empty", ``, model.RejectBadJSON},
	}
	want = map[string]model.RejectKind{}
	for _, c := range cases {
		msgs = append(msgs, kafka.Message{Key: []byte(c.key), Value: []byte(c.value)})
		want[c.key] = c.kind
	}
	return msgs, want
}

// readAll reads every message of every partition of topic, up to the end
// offsets at the time of the call.
func readAll(t *testing.T, brokers []string, topic string) []kafka.Message {
	return testenv.ReadAll(t, brokers, topic)
}

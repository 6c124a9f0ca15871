package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/internal/topics"
)

// BenchmarkFetch measures the ingester's CPU per message of reading the
// events topic alone (no decoding, no ClickHouse), from a topic of
// fetchBenchEvents typical events on 4 partitions, read from the start by a
// new consumer group each time:
//
//   - fetchers: the group's fetchers (a Fetch per partition, its record
//     batches decoded in place), the records drained run by run, as the
//     fetch loop takes them;
//   - reader: kafka-go's Reader.FetchMessage, message by message, configured
//     as the ingester configured it before the fetchers.
//
// The figure to compare is cpu-ns/msg (the process's user+system CPU per
// message: the broker's own CPU is not in it).
//
//	go test ./ingest/consumer -run '^$' -bench Fetch -benchtime 3x -cpu 1
func BenchmarkFetch(b *testing.B) {
	brokers := testenv.KafkaBrokers(b)
	topic := testenv.Topic(b, brokers, "test.fetchbench")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := topics.Ensure(ctx, brokers, topics.Spec{Name: topic, Partitions: 4, ReplicationFactor: 1}); err != nil {
		b.Fatal(err)
	}
	events := testenv.Events(fetchBenchEvents, "pipe.fetchbench", 11)
	msgs := make([]kafka.Message, len(events))
	for i := range events {
		msgs[i] = kafka.Message{Key: []byte(events[i].PartitionKey()), Value: events[i].AppendJSON(nil)}
	}
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll,
		BatchSize: 10000, BatchBytes: 16 << 20, BatchTimeout: 5 * time.Millisecond, Transport: tr}
	for i := 0; i < len(msgs); i += 50000 {
		if err := w.WriteMessages(ctx, msgs[i:min(i+50000, len(msgs))]...); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	msgs = nil
	cfg := Config{SessionTimeout: 6 * time.Second, RetryMax: time.Second}
	cfg.Kafka.Brokers, cfg.Kafka.Topic = brokers, topic

	b.Run("fetchers", func(b *testing.B) {
		benchmarkFetch(b, func(ctx context.Context, group string) int {
			cfg.Group = group
			c := &Consumer{cfg: cfg, log: slog.New(slog.DiscardHandler), m: NewMetrics(nil),
				dialer: &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, DialFunc: dialBuffered},
				lag:    topics.NewLag(func(string, int64) {}, topic)}
			g, err := c.newGroup()
			if err != nil {
				b.Fatal(err)
			}
			fctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); g.run(fctx) }()
			n := 0
			for n < fetchBenchEvents {
				select {
				case f := <-g.out:
					n += len(f.recs)
					unrefRecords(f.recs)
					clear(f.recs)
					select {
					case g.spare <- f.recs[:0]:
					default:
					}
				case <-ctx.Done():
					b.Fatalf("%d of %d messages read: %v", n, fetchBenchEvents, ctx.Err())
				}
			}
			stop()
			g.close()
			<-done
			return n
		})
	})
	b.Run("reader", func(b *testing.B) {
		benchmarkFetch(b, func(ctx context.Context, group string) int {
			r := kafka.NewReader(kafka.ReaderConfig{
				Dialer:  &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, DialFunc: dialBuffered},
				Brokers: brokers, GroupID: group, Topic: topic, MinBytes: 1, MaxBytes: 2 * topics.MaxMessageBytes,
				MaxWait: 3 * time.Second, QueueCapacity: 64, CommitInterval: 0, StartOffset: kafka.FirstOffset,
				SessionTimeout: 6 * time.Second, HeartbeatInterval: 1500 * time.Millisecond, RebalanceTimeout: 6 * time.Second,
				JoinGroupBackoff: time.Second, ReadLagInterval: -1, WatchPartitionChanges: true,
			})
			defer r.Close()
			n := 0
			for n < fetchBenchEvents {
				if _, err := r.FetchMessage(ctx); err != nil {
					b.Fatalf("%d of %d messages read: %v", n, fetchBenchEvents, err)
				}
				n++
			}
			return n
		})
	})
}

// fetchBenchEvents is how many messages BenchmarkFetch reads per iteration.
const fetchBenchEvents = 200_000

// benchmarkFetch runs read (which reads the whole topic with a new group and
// returns how many messages it read) once per iteration and reports CPU
// and wall nanoseconds per message.
func benchmarkFetch(b *testing.B, read func(ctx context.Context, group string) int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n := 0
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		n += read(ctx, testenv.Name(fmt.Sprintf("fetchbench%d", i)))
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/msg")
}

package consumer_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/internal/topics"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkIngest measures sustained ingest, Kafka -> ClickHouse: it first
// fills a fresh topic with HANDOFF_BENCH_EVENTS distinct events (default
// 500,000), then starts the ingester and times until ClickHouse holds them
// all. Reports events/s.
//
//	go test ./ingest/consumer -run '^$' -bench Ingest -benchtime 1x
func BenchmarkIngest(b *testing.B) {
	n := envInt("HANDOFF_BENCH_EVENTS", 500_000)
	s := newSetup(b, "bench")
	cfg := s.config()
	cfg.BatchSize = envInt("HANDOFF_BENCH_BATCH", 50_000)
	cfg.FlushInterval = time.Second
	cfg.Kafka.Partitions = envInt("HANDOFF_BENCH_PARTITIONS", 6)
	cfg.Workers = envInt("HANDOFF_BENCH_WORKERS", 0)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := topics.Ensure(ctx, s.brokers, topics.Spec{Name: s.topic, Partitions: cfg.Kafka.Partitions}); err != nil {
		b.Fatal(err)
	}
	events := testenv.Events(n, "pipe.bench", 11)
	msgs := make([]kafka.Message, len(events))
	var bytes int
	for i := range events {
		msgs[i] = kafka.Message{Key: []byte(events[i].PartitionKey()), Value: events[i].AppendJSON(nil)}
		bytes += len(msgs[i].Value)
	}
	events = nil
	w := writer(b, s.brokers, s.topic)
	w.BatchSize = 10000
	w.Compression = 0
	t0 := time.Now()
	for i := 0; i < len(msgs); i += 50000 {
		if err := w.WriteMessages(ctx, msgs[i:min(i+50000, len(msgs))]...); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("produced %d events (%.0f bytes avg) in %v", n, float64(bytes)/float64(n), time.Since(t0).Round(time.Millisecond))
	msgs = nil

	for i := 0; i < b.N; i++ {
		reg := prometheus.NewRegistry()
		log := testLogger(b)
		cctx, ccancel := context.WithCancel(ctx)
		c, err := consumer.New(cctx, cfg, consumer.Options{Logger: log, Registry: reg})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- c.Run(cctx) }()
		q := "SELECT count() FROM " + s.db + ".events"
		var firstRow time.Time
		for {
			got := count(b, s.conn, q)
			if got > 0 && firstRow.IsZero() {
				firstRow = time.Now()
			}
			if got >= uint64(n) {
				break
			}
			if ctx.Err() != nil {
				b.Fatalf("timed out with %d of %d events stored", got, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
		el := time.Since(start)
		steady := time.Since(firstRow)
		b.StopTimer()
		ccancel()
		<-done
		c.Close()
		b.ReportMetric(float64(n)/el.Seconds(), "events/s")
		if !firstRow.IsZero() {
			b.Logf("%d events in %v (%.0f events/s overall; %.0f events/s from the first stored row, excluding group join)",
				n, el.Round(time.Millisecond), float64(n)/el.Seconds(), float64(n)/steady.Seconds())
		}
		// Next iteration reads again from the start with a new group.
		cfg.Group = testenv.Name("bench_group")
		if err := s.conn.Exec(ctx, "TRUNCATE TABLE "+s.db+".events"); err != nil {
			b.Fatal(err)
		}
	}
}

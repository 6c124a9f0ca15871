package consumer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/model"
)

// sizedMessages returns n messages of valid events whose key plus value
// are exactly size bytes each.
func sizedMessages(t *testing.T, n, size int, pipeline string) []kafka.Message {
	t.Helper()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%04d", pipeline, i), Type: model.JobSucceeded,
			Time: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Pipeline: pipeline, BusinessDate: model.MustParseDate("2026-09-30"),
			BatchID: "20260930", System: model.Producer, Attrs: map[string]string{"pad": ""}}
		key := []byte(e.PartitionKey())
		e.Attrs["pad"] = strings.Repeat("x", size-len(key)-len(e.AppendJSON(nil)))
		msgs[i] = kafka.Message{Key: key, Value: e.AppendJSON(nil)}
		if got := len(msgs[i].Key) + len(msgs[i].Value); got != size {
			t.Fatalf("message %d has %d bytes, want %d", i, got, size)
		}
	}
	return msgs
}

// TestBatchBytes: a batch is cut before its messages would exceed
// BatchBytes, however many messages the count limit would allow. With
// messages of S bytes and a limit of 10.5 S, every batch cut by bytes
// holds exactly 10 messages: 95 messages make 9 such batches (cut as the
// 11th, 21st, ... 91st arrives) and leave 5, which the age limit (far
// away) does not cut and the shutdown flushes. Nothing here depends on
// speed: the counts follow from the sizes alone.
func TestBatchBytes(t *testing.T) {
	s := newSetup(t, "bytes")
	const size, n = 8 << 10, 95
	cfg := s.config()
	cfg.BatchSize = 1000
	cfg.BatchBytes = consumer.ByteSize(10*size + size/2)
	cfg.FlushInterval = 10 * time.Minute
	_, reg, stop := start(t, cfg, consumer.Options{})
	produce(t, writer(t, s.brokers, s.topic), sizedMessages(t, n, size, "pipe.bytes"))

	q := "SELECT count() FROM " + s.db + ".events FINAL"
	waitCount(t, s.conn, 2*time.Minute, 90, q)
	flushes := func(trigger string) float64 {
		return metricValue(t, reg, "handoff_ingest_flushes_total", "trigger", trigger)
	}
	if b, sz, age := flushes("bytes"), flushes("size"), flushes("age"); b != 9 || sz != 0 || age != 0 {
		t.Fatalf("flushes by bytes %v, size %v, age %v; want 9, 0, 0", b, sz, age)
	}
	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if got := count(t, s.conn, q); got != n {
		t.Fatalf("%d events stored after the shutdown flush, want %d", got, n)
	}
	if sh := flushes("shutdown"); sh != 1 {
		t.Fatalf("%v shutdown flushes, want 1 (the last 5 messages)", sh)
	}
}

package consumer_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/model"
)

// TestDeadLetterOfEmptyMessage: the dead-letter copy of an empty message
// carries the original (empty) bytes, not a null value: a null is a
// tombstone, which compacted topics delete and consumers read as "no
// message". Read back with the protocol-level Fetch, which tells null
// from empty (the Reader API does not).
func TestDeadLetterOfEmptyMessage(t *testing.T) {
	s := newSetup(t, "dlqempty")
	_, _, stop := start(t, s.config(), consumer.Options{})
	produce(t, writer(t, s.brokers, s.topic), []kafka.Message{{Key: []byte("empty"), Value: []byte{}}})
	waitCount(t, s.conn, time.Minute, 1, "SELECT count() FROM "+s.db+".dead_letters FINAL")
	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(s.brokers...), Transport: tr}
	var found int
	for p := range 4 { // s.config() creates 4 partitions
		resp, err := c.Fetch(ctx, &kafka.FetchRequest{Topic: s.dlq, Partition: p, Offset: 0, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("fetch %s partition %d: %v", s.dlq, p, err)
		}
		if resp.Error != nil {
			t.Fatalf("fetch %s partition %d: %v", s.dlq, p, resp.Error)
		}
		if resp.Records == nil {
			continue
		}
		for {
			r, err := resp.Records.ReadRecord()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read %s partition %d: %v", s.dlq, p, err)
			}
			found++
			if r.Value == nil {
				t.Fatalf("dead letter at %s/%d/%d has a null value (a tombstone), want the original empty bytes", s.dlq, p, r.Offset)
			}
			if b, err := io.ReadAll(r.Value); err != nil || len(b) != 0 {
				t.Fatalf("dead letter value %q, %v; want empty", b, err)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d dead letters on %s, want 1", found, s.dlq)
	}
}

// TestDeadLettersOfManyLargeMessages: a dozen oversized messages (over the
// 1 MiB event limit, within the topic's 8 MiB) are all dead-lettered. The
// dead-letter writer must not put more into one request than the topic
// accepts: 12 MiB in one record batch is refused by the broker every time,
// and the ingester would retry for ever.
func TestDeadLettersOfManyLargeMessages(t *testing.T) {
	s := newSetup(t, "dlqlarge")
	_, _, stop := start(t, s.config(), consumer.Options{})
	w := writer(t, s.brokers, s.topic)
	const n = 12
	big := kafka.Message{Key: []byte("big"), Value: []byte(`{"attrs":{"blob":"` + strings.Repeat("x", model.MaxEventSize) + `"}}`)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range n { // one request each: the test's own writer must fit the topic too
		if err := w.WriteMessages(ctx, big); err != nil {
			t.Fatal(err)
		}
	}
	waitCount(t, s.conn, time.Minute, n, "SELECT count() FROM "+s.db+".dead_letters FINAL WHERE reason = 'too_large'")
	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if got := len(readAll(t, s.brokers, s.dlq)); got != n {
		t.Fatalf("%d messages on the dead-letter topic, want %d", got, n)
	}
}

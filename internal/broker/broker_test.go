package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/broker"
)

// TestKafkaGoRoundTripAndPersistence checks what the demo relies on: the
// embedded broker speaks enough Kafka for kafka-go to produce and read,
// and with a data directory its messages survive a restart.
func TestKafkaGoRoundTripAndPersistence(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	b, err := broker.Start(broker.Config{Port: 0, DataDir: dir, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addrs()...), Topic: "t", BatchTimeout: 5 * time.Millisecond,
		AllowAutoTopicCreation: true, RequiredAcks: kafka.RequireAll}
	var msgs []kafka.Message
	for i := range 20 {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint(i % 3)), Value: []byte(fmt.Sprint(i))})
	}
	// Auto-creation may answer the first write with a retriable error.
	for {
		err = w.WriteMessages(ctx, msgs...)
		if err == nil || ctx.Err() != nil {
			break
		}
		select { // back off before retrying; ctx bounds the whole wait
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	w.Close()
	b.Close()

	b, err = broker.Start(broker.Config{Port: 0, DataDir: dir, Partitions: 2})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer b.Close()
	seen := map[string]bool{}
	for p := range 2 {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: b.Addrs(), Topic: "t", Partition: p, MaxWait: 100 * time.Millisecond})
		conn, err := kafka.DialLeader(ctx, "tcp", b.Addrs()[0], "t", p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < last; off++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("partition %d offset %d: %v", p, off, err)
			}
			seen[string(m.Value)] = true
		}
		r.Close()
	}
	if len(seen) != 20 {
		t.Fatalf("read back %d distinct messages after a restart, want 20", len(seen))
	}
}

package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// client returns a Kafka client with a transport of its own, and its
// close: kafka.DefaultTransport pools connections, and a pooled
// connection to a broker restarted since fails with EOF.
func client(brokers []string) (*kafka.Client, func()) {
	tr := &kafka.Transport{}
	return &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}, tr.CloseIdleConnections
}

// EndOffsets returns the end offset (the next offset to be written) of
// every partition of topic.
func EndOffsets(t testing.TB, brokers []string, topic string) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, done := client(brokers)
	defer done()
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(meta.Topics) != 1 {
		t.Fatalf("metadata of topic %s: %v", topic, err)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		reqs = append(reqs, kafka.LastOffsetOf(p.ID))
	}
	lo, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatalf("list offsets of topic %s: %v", topic, err)
	}
	end := map[int]int64{}
	for _, p := range lo.Topics[topic] {
		end[p.Partition] = p.LastOffset
	}
	return end
}

// Uncommitted returns how many messages of topics consumer group has not
// committed: the log end offset minus the committed offset, summed over
// every partition (a partition with no commit counts from 0). Tests use it
// to prove that a graceful stop left nothing behind.
func Uncommitted(t testing.TB, brokers []string, group string, topics ...string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, done := client(brokers)
	defer done()
	var total int64
	for _, topic := range topics {
		end := EndOffsets(t, brokers, topic)
		var parts []int
		for p := range end {
			parts = append(parts, p)
		}
		of, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
		if err != nil {
			t.Fatalf("committed offsets of group %s on %s: %v", group, topic, err)
		}
		for _, p := range of.Topics[topic] {
			total += end[p.Partition] - max(p.CommittedOffset, 0)
		}
	}
	return total
}

// ReadAll reads every message of every partition of topic, up to the end
// offsets at the time of the call.
func ReadAll(t testing.TB, brokers []string, topic string) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &kafka.Transport{} // not the pooled default: see Uncommitted
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(meta.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		reqs = append(reqs, kafka.LastOffsetOf(p.ID))
	}
	lo, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatalf("list offsets of %s: %v", topic, err)
	}
	var out []kafka.Message
	for _, p := range lo.Topics[topic] {
		if p.LastOffset <= 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p.Partition, MaxBytes: 32 << 20, MaxWait: 2 * time.Second})
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s partition %d: %v", topic, p.Partition, err)
			}
			out = append(out, m)
			if m.Offset >= p.LastOffset-1 {
				break
			}
		}
		r.Close()
	}
	return out
}

package live

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/judge/stream"
)

// Murmur2 returns the partition of key among n the way Java clients' default
// partitioner (and handoff emit) choose it.
func Murmur2(key []byte, n int) int { return murmur2In(key, partitionIDs(n)) }

// murmur2In is Murmur2 over the ids 0..len(ids)-1, given as ids: the
// runner keeps them, since it asks once per event.
func murmur2In(key []byte, ids []int) int {
	var b kafka.Murmur2Balancer
	return b.Balance(kafka.Message{Key: key}, ids...)
}

func partitionIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// KafkaOffsets implements Offsets with a Kafka client.
type KafkaOffsets struct{ Client *kafka.Client }

// Committed returns group's committed offsets on partitions of topic.
func (k KafkaOffsets) Committed(ctx context.Context, group, topic string, partitions []int) (map[int]int64, error) {
	return stream.Committed(ctx, k.Client, group, topic, partitions)
}

// Ends returns the log end offset of every partition of topic.
func (k KafkaOffsets) Ends(ctx context.Context, topic string) (map[int]int64, error) {
	md, err := k.Client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	var parts []int
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("metadata of %s: %w", topic, t.Error)
		}
		for _, p := range t.Partitions {
			parts = append(parts, p.ID)
		}
	}
	return stream.EndOffsets(ctx, k.Client, topic, parts)
}

// KafkaPublisher implements Publisher with one writer per topic, waiting
// for every in-sync replica (acks=all).
//
// Its writers do not linger to fill a batch: each Publish is one call from
// the runner's goroutine, which waits for the acknowledgement before the
// next, so no other message could join the batch and waiting would only
// delay the findings (a deadline's finding went out 5 ms after it was
// judged, the writer's BatchTimeout). A call's messages still go in one
// produce request per partition: the writer adds them all to the batch
// before the batch may be sent.
//
// Batches are LZ4-compressed, as the diagnoses topic's: a finding carries
// its batch's diagnosis, 3 to 4 KiB of repetitive JSON that LZ4 shrinks
// about twelvefold. After a fault or a restart a detector may publish
// hundreds of thousands of records at once; uncompressed, the brokers
// wrote and replicated gigabytes of them, the largest cost of settling
// the findings on the local cluster.
type KafkaPublisher struct {
	brokers []string
	writers map[string]*kafka.Writer
	// Log hears of failed attempts while Publish waits (nil: not logged).
	Log *slog.Logger
}

// NewKafkaPublisher returns a publisher to brokers.
func NewKafkaPublisher(brokers []string) *KafkaPublisher {
	return &KafkaPublisher{brokers: brokers, writers: map[string]*kafka.Writer{}}
}

// Publish writes msgs to topic and waits for the acknowledgement, writing
// again what was not acknowledged until it is or ctx ends: a leader
// change (a broker died) delays the findings, it does not stop detection
// (topics.WriteAll). Findings once computed are not computed again, so
// giving up would lose them.
func (p *KafkaPublisher) Publish(ctx context.Context, topic string, msgs ...kafka.Message) error {
	w := p.writers[topic]
	if w == nil {
		w = &kafka.Writer{
			Addr:         kafka.TCP(p.brokers...),
			Topic:        topic,
			Balancer:     &kafka.Murmur2Balancer{},
			RequiredAcks: kafka.RequireAll,
			Compression:  kafka.Lz4,
			BatchTimeout: noLinger,
			BatchSize:    1000,
			MaxAttempts:  10,
		}
		p.writers[topic] = w
	}
	return topics.WriteAll(ctx, w, msgs, func(err error, left int) {
		if p.Log != nil {
			p.Log.Warn("detect: publish to "+topic+" failed; writing again", "left", left, "err", err)
		}
	})
}

// noLinger is the writers' BatchTimeout: sent as soon as the call's
// messages are in (kafka-go takes zero for its 1 s default).
const noLinger = time.Nanosecond

// Close flushes and closes the writers.
func (p *KafkaPublisher) Close() error {
	var first error
	for _, w := range p.writers {
		if err := w.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

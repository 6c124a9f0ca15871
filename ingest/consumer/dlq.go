package consumer

import (
	"context"
	"fmt"
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/sink"
	"github.com/handoff-dev/handoff/ingest/topics"
)

// Headers of dead-letter messages. The value is the original message.
const (
	HeaderReason          = "handoff-reason"           // model.RejectKind, e.g. bad_json
	HeaderError           = "handoff-error"            // the validation error text
	HeaderSourceTopic     = "handoff-source-topic"     // where the message was read
	HeaderSourcePartition = "handoff-source-partition" // decimal
	HeaderSourceOffset    = "handoff-source-offset"    // decimal
	HeaderReceivedMS      = "handoff-received-ms"      // when the ingester rejected it, Unix ms
	HeaderTruncated       = "handoff-truncated"        // "true" when the value was cut to fit the topic
)

// writeDLQ publishes the original bytes of each dead letter with the
// reason and source in headers, cut (and marked) when it would not fit
// the topic's message limit.
func (c *Consumer) writeDLQ(ctx context.Context, dead []sink.DeadLetter) error {
	out := make([]kafka.Message, len(dead))
	for i, d := range dead {
		value := d.Payload
		if value == nil {
			// An empty message: kafka-go reads it as nil, and a nil value
			// would go out as a tombstone (null), not the original bytes.
			value = []byte{}
		}
		hdr := []kafka.Header{
			{Key: HeaderReason, Value: []byte(d.Reason)},
			{Key: HeaderError, Value: []byte(d.Error)},
			{Key: HeaderSourceTopic, Value: []byte(d.Source.Topic)},
			{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(int(d.Source.Partition)))},
			{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(d.Source.Offset, 10))},
			{Key: HeaderReceivedMS, Value: []byte(strconv.FormatInt(d.ReceivedMS, 10))},
		}
		if limit := topics.MaxMessageBytes - 64<<10; len(value) > limit {
			value = value[:limit]
			hdr = append(hdr, kafka.Header{Key: HeaderTruncated, Value: []byte("true")})
		}
		var key []byte
		if d.Key != "" {
			key = []byte(d.Key)
		}
		out[i] = kafka.Message{Key: key, Value: value, Headers: hdr}
	}
	if err := c.dlq.WriteMessages(ctx, out...); err != nil {
		return fmt.Errorf("kafka topic %s: %w", c.cfg.DLQTopic, err)
	}
	return nil
}

// deadLetter writes the group's dead letters to the dead-letter topic and
// then to ClickHouse, retrying each until it succeeds or ctx ends: the
// group's offsets are committed only after both acknowledged.
func (c *Consumer) deadLetter(ctx context.Context, group []*decoded) error {
	var dead []sink.DeadLetter
	for _, d := range group {
		for _, dl := range d.dead {
			dead = append(dead, dl...)
		}
	}
	if err := c.retry(ctx, "dlq_write", fmt.Sprintf("write %d dead letters to Kafka topic %s", len(dead), c.cfg.DLQTopic), 0,
		func(ctx context.Context) error { return c.writeDLQ(ctx, dead) }); err != nil {
		return err
	}
	if err := c.retry(ctx, "dead_letter_insert", fmt.Sprintf("insert %d dead letters into ClickHouse", len(dead)), 0,
		func(ctx context.Context) error {
			if err := c.sink.InsertDeadLetters(ctx, dead); err != nil {
				return c.recreateIfMissing(ctx, err)
			}
			return nil
		}); err != nil {
		return err
	}
	for _, d := range dead {
		c.m.Rejected.WithLabelValues(string(d.Reason)).Inc()
	}
	return nil
}

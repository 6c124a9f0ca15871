package consumer

import (
	"context"
	"fmt"

	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/store/schema"
)

// writeDLQ publishes the original bytes of each dead letter with the
// reason and source in headers (the deadletter package's format).
func (c *Consumer) writeDLQ(ctx context.Context, dead []schema.DeadLetter) error {
	if err := c.dlq.WriteMessages(ctx, deadletter.Messages(dead)...); err != nil {
		return fmt.Errorf("kafka topic %s: %w", c.cfg.DLQTopic, err)
	}
	return nil
}

// deadLetter writes the group's dead letters to the dead-letter topic and
// then to ClickHouse, retrying each until it succeeds or ctx ends: the
// group's offsets are committed only after both acknowledged.
func (c *Consumer) deadLetter(ctx context.Context, group []*decoded) error {
	var dead []schema.DeadLetter
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

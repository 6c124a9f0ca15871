package consumer

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// lastOffsets appends to dst the message of the highest offset of every
// partition in msgs, without key, value and headers.
func lastOffsets(dst []kafka.Message, msgs []kafka.Message) []kafka.Message {
	for i := range msgs {
		m := &msgs[i]
		k := -1
		for j := range dst {
			if dst[j].Partition == m.Partition {
				k = j
				break
			}
		}
		if k < 0 {
			dst = append(dst, kafka.Message{})
			k = len(dst) - 1
		} else if dst[k].Offset >= m.Offset {
			continue
		}
		dst[k] = kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, HighWaterMark: m.HighWaterMark}
	}
	return dst
}

// commit commits the highest offset of every partition in the group (n
// messages, all stored). It returns an error only when ctx ended; a commit
// that keeps failing is logged and left to a later commit, which covers
// these messages too (until then they may be consumed again, and are
// deduplicated).
func (c *Consumer) commit(ctx context.Context, group []*decoded, n int) error {
	var commits []kafka.Message
	for _, d := range group {
		commits = lastOffsets(commits, d.last)
	}
	err := c.retry(ctx, "commit", fmt.Sprintf("commit offsets of %d messages (group %s)", n, c.cfg.Group), 8,
		func(ctx context.Context) error { return c.reader.CommitMessages(ctx, commits...) })
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		c.log.Error("offsets not committed; the stored messages will be consumed again and deduplicated", "err", err)
		return nil
	}
	c.m.Committed.Add(float64(n))
	c.m.LastCommitTS.SetToCurrentTime()
	var total int64
	for _, m := range commits {
		c.lag[m.Partition] = max(0, m.HighWaterMark-m.Offset-1)
	}
	for _, l := range c.lag {
		total += l
	}
	c.m.Lag.Set(float64(total))
	return nil
}

package consumer

import (
	"context"
	"fmt"
	"slices"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
)

// lastOffset records in dst (the last message of every partition, without
// key and value) that r, a record of topic with the partition's high
// watermark hwm, came after what dst holds of its partition.
func lastOffset(dst []kafka.Message, topic string, r *record, hwm int64) []kafka.Message {
	p := int(r.partition)
	for j := range dst {
		if dst[j].Partition == p {
			if dst[j].Offset < r.offset {
				dst[j].Offset, dst[j].HighWaterMark = r.offset, hwm
			}
			return dst
		}
	}
	return append(dst, kafka.Message{Topic: topic, Partition: p, Offset: r.offset, HighWaterMark: hwm})
}

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
	// Messages read again after the group was rejoined (their batch was
	// stored and its commit waited for the broker) must not move a
	// partition's commit back below what this consumer committed: the
	// offsets between were stored and would be consumed again.
	commits = slices.DeleteFunc(commits, func(m kafka.Message) bool {
		last, ok := c.committed[m.Partition]
		return ok && m.Offset <= last
	})
	var err error
	if len(commits) > 0 {
		err = c.retry(ctx, "commit", fmt.Sprintf("commit offsets of %d messages (group %s)", n, c.cfg.Group), 8,
			func(ctx context.Context) error {
				return topics.CommitForward(ctx, c.grp, c.offsets, c.cfg.Group, commits, c.log)
			})
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		c.log.Error("offsets not committed; the stored messages will be consumed again and deduplicated", "err", err)
		return nil
	}
	for _, m := range commits {
		c.committed[m.Partition] = m.Offset
	}
	c.m.Committed.Add(float64(n))
	c.m.LastCommitTS.SetToCurrentTime()
	c.lag.Committed(commits)
	return nil
}

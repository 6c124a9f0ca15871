package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
)

// groupState is what notify keeps of a consumer group across restarts, as
// the group's record (keyed by the group) on the compacted state topic:
// what its first start decided. The open set is rebuilt from the findings
// topic on every start; only this one decision does not follow from the
// records (it depends on when the group first started), so it is written
// down once, before anything is delivered.
type groupState struct {
	Group string `json:"group"`
	// FirstStart is the clock at the group's first start (no committed
	// offset on the findings topic); Since the window then.
	FirstStart time.Time `json:"first_start"`
	Since      string    `json:"since"`
	// SkipRaisedBefore is FirstStart - Since: a finding raised before it
	// is never delivered by this group; zero (Since 0): none is skipped.
	SkipRaisedBefore time.Time `json:"skip_raised_before"`
}

// readState returns the latest record of group on the state topic, and
// false when there is none.
func readState(ctx context.Context, c *kafka.Client, brokers []string, topic, group string) (groupState, bool, error) {
	var st groupState
	found := false
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return st, false, fmt.Errorf("metadata of state topic %s: %w", topic, err)
	}
	if len(meta.Topics) != 1 || meta.Topics[0].Error != nil {
		return st, false, fmt.Errorf("metadata of state topic %s: %v", topic, meta.Topics)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	lo, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return st, false, fmt.Errorf("offsets of state topic %s: %w", topic, err)
	}
	for _, p := range lo.Topics[topic] {
		if p.Error != nil {
			return st, false, fmt.Errorf("offsets of state topic %s[%d]: %w", topic, p.Partition, p.Error)
		}
		if p.LastOffset <= p.FirstOffset {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p.Partition, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond})
		if err := r.SetOffset(p.FirstOffset); err != nil {
			r.Close()
			return st, false, fmt.Errorf("seek state topic %s[%d]: %w", topic, p.Partition, err)
		}
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				return st, false, fmt.Errorf("read state topic %s[%d] up to offset %d: %w", topic, p.Partition, p.LastOffset, err)
			}
			if string(m.Key) == group && len(m.Value) > 0 {
				var s groupState
				if err := json.Unmarshal(m.Value, &s); err != nil {
					r.Close()
					return st, false, fmt.Errorf("state topic %s[%d] offset %d, the record of group %s: %w (delete the record, and the group's first start is decided again)", topic, p.Partition, m.Offset, group, err)
				}
				st, found = s, true
			}
			if m.Offset >= p.LastOffset-1 {
				break
			}
		}
		r.Close()
	}
	return st, found, nil
}

// writeState writes st as the record of its group, retrying until Kafka
// acknowledged it or ctx ended.
func writeState(ctx context.Context, w *kafka.Writer, st groupState) error {
	v, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode the state of group %s: %w", st.Group, err)
	}
	if err := topics.WriteAll(ctx, w, []kafka.Message{{Key: []byte(st.Group), Value: v}}, nil); err != nil {
		return fmt.Errorf("write the state of group %s to %s: %w", st.Group, w.Topic, err)
	}
	return nil
}

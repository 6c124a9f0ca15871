package topics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
)

// OffsetReader reads a consumer group's committed offsets (a *kafka.Client
// has this method).
type OffsetReader interface {
	OffsetFetch(ctx context.Context, req *kafka.OffsetFetchRequest) (*kafka.OffsetFetchResponse, error)
}

// Forward returns the commits of last (the last stored message of each
// topic partition, committed as its offset + 1) that move group's committed
// offset forward, and drops the others.
//
// Why: a Kafka group accepts an offset commit from any current member for
// any partition; it does not check that the partition is still the
// member's. After a rebalance an ingester may still be storing messages of
// a partition that another ingester now reads and has committed further;
// committing them would move the group's offset backwards, and the
// partition would be read again from there after the next rebalance
// (duplicates only, but as many as the gap). With Forward, the slower
// ingester's commit is dropped instead. The check and the commit are two
// requests, so two members committing one partition in the same instant
// (only around a rebalance) can still race; the window is one round trip.
func Forward(ctx context.Context, r OffsetReader, group string, last []kafka.Message) ([]kafka.Message, error) {
	if len(last) == 0 {
		return nil, nil
	}
	req := &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{}}
	for _, m := range last {
		req.Topics[m.Topic] = append(req.Topics[m.Topic], m.Partition)
	}
	resp, err := r.OffsetFetch(ctx, req)
	if err == nil {
		err = resp.Error
	}
	if err != nil {
		return nil, fmt.Errorf("read the committed offsets of group %s: %w", group, err)
	}
	committed := map[string]map[int]int64{}
	for topic, parts := range resp.Topics {
		committed[topic] = map[int]int64{}
		for _, p := range parts {
			if p.Error != nil {
				return nil, fmt.Errorf("read the committed offset of group %s on %s/%d: %w", group, topic, p.Partition, p.Error)
			}
			committed[topic][p.Partition] = p.CommittedOffset
		}
	}
	out := last[:0:0]
	for _, m := range last {
		c, ok := committed[m.Topic][m.Partition]
		if !ok || c < m.Offset+1 { // -1: nothing committed yet
			out = append(out, m)
		}
	}
	return out, nil
}

// Committer commits offsets (a *kafka.Reader of a group).
type Committer interface {
	CommitMessages(ctx context.Context, msgs ...kafka.Message) error
}

// CommitForward commits the offsets of last that move the group's committed
// offsets forward (Forward), and logs the others. Both of handoff
// ingest's consumers commit this way.
func CommitForward(ctx context.Context, c Committer, offsets OffsetReader, group string, last []kafka.Message, log *slog.Logger) error {
	fwd, err := Forward(ctx, offsets, group, last)
	if err != nil {
		return err
	}
	if len(fwd) < len(last) {
		log.Info("not committing offsets behind the group's (the partitions moved to another member in a rebalance; what was stored is deduplicated)",
			"group", group, "kept", len(fwd), "of", len(last))
	}
	if len(fwd) == 0 {
		return nil
	}
	return c.CommitMessages(ctx, fwd...)
}

// MessageWriter writes messages to Kafka (a *kafka.Writer).
type MessageWriter interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// WriteAll writes msgs with w, then writes again the messages the brokers
// did not acknowledge, with backoff (100 ms doubling to 2 s), until every
// message is acknowledged, ctx ends, or the brokers refuse a message for
// good (a kafka.Error that is not temporary: too large, not authorized).
// retrying, when set, hears of each failed attempt and how many messages
// are left.
//
// Why: when a partition's leader dies, writes to it fail until the
// controller has moved the leadership (broker.session.timeout.ms, 9 s by
// default), longer than a writer's own attempts last (about 3 s), so a
// producer that gives up then fails although a replica takes over soon
// after. Only unacknowledged messages are written again, so an
// acknowledged one is not duplicated; the messages of one partition fail
// or succeed together, so their order is kept. A message whose
// acknowledgement was lost may still be written twice: consumers must
// deduplicate (handoff's do: event_id, fingerprint and seq).
func WriteAll(ctx context.Context, w MessageWriter, msgs []kafka.Message, retrying func(err error, left int)) error {
	backoff := 100 * time.Millisecond
	for {
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return nil
		}
		final := permanent(err)
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) && len(werrs) == len(msgs) {
			var failed []kafka.Message
			final = true
			for i, e := range werrs {
				if e != nil {
					failed = append(failed, msgs[i])
					final = final && permanent(e)
				}
			}
			msgs = failed
		}
		if final {
			return err // the brokers refuse it: writing again changes nothing
		}
		if retrying != nil {
			retrying(err, len(msgs))
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// permanent reports whether err is a Kafka error that writing again cannot
// cure.
func permanent(err error) bool {
	var kerr kafka.Error
	return errors.As(err, &kerr) && !kerr.Temporary()
}

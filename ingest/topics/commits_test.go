package topics_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/topics"
)

// committed answers OffsetFetch with fixed offsets.
type committed struct {
	offsets map[string]map[int]int64
	err     error
	asked   *kafka.OffsetFetchRequest
}

func (c *committed) OffsetFetch(_ context.Context, req *kafka.OffsetFetchRequest) (*kafka.OffsetFetchResponse, error) {
	c.asked = req
	if c.err != nil {
		return nil, c.err
	}
	resp := &kafka.OffsetFetchResponse{Topics: map[string][]kafka.OffsetFetchPartition{}}
	for topic, parts := range req.Topics {
		for _, p := range parts {
			off, ok := c.offsets[topic][p]
			if !ok {
				off = -1
			}
			resp.Topics[topic] = append(resp.Topics[topic], kafka.OffsetFetchPartition{Partition: p, CommittedOffset: off})
		}
	}
	return resp, nil
}

func TestForward(t *testing.T) {
	msg := func(topic string, p int, off int64) kafka.Message {
		return kafka.Message{Topic: topic, Partition: p, Offset: off}
	}
	r := &committed{offsets: map[string]map[int]int64{
		"ev": {0: 100, 1: 50, 2: 11},
		"f":  {0: 7},
	}}
	last := []kafka.Message{
		msg("ev", 0, 80), // behind the group (another member committed 100): dropped
		msg("ev", 1, 60), // ahead: kept
		msg("ev", 2, 10), // commits 11, already committed: dropped
		msg("ev", 3, 0),  // nothing committed yet: kept
		msg("f", 0, 7),   // commits 8 over 7: kept
	}
	got, err := topics.Forward(context.Background(), r, "g", last)
	if err != nil {
		t.Fatal(err)
	}
	want := []kafka.Message{msg("ev", 1, 60), msg("ev", 3, 0), msg("f", 0, 7)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Forward = %v, want %v", got, want)
	}
	if r.asked.GroupID != "g" || len(r.asked.Topics["ev"]) != 4 || len(r.asked.Topics["f"]) != 1 {
		t.Errorf("asked %+v, want group g, 4 partitions of ev and 1 of f", r.asked)
	}
	if last[0].Offset != 80 {
		t.Error("Forward changed its input")
	}

	r.err = errors.New("coordinator moved")
	if _, err := topics.Forward(context.Background(), r, "g", last); err == nil || !strings.Contains(err.Error(), "group g") {
		t.Errorf("error %v, want one naming the group", err)
	}
}

package topics_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
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

// flaky fails the messages whose value is in fail, once each, with err.
type flaky struct {
	fail  map[string]error
	calls [][]string
}

func (f *flaky) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	var vals []string
	werrs := make(kafka.WriteErrors, len(msgs))
	failed := false
	for i, m := range msgs {
		vals = append(vals, string(m.Value))
		if err := f.fail[string(m.Value)]; err != nil {
			werrs[i], failed = err, true
			delete(f.fail, string(m.Value))
		}
	}
	f.calls = append(f.calls, vals)
	if failed {
		return werrs
	}
	return nil
}

func TestWriteAll(t *testing.T) {
	msgs := func(vals ...string) []kafka.Message {
		var out []kafka.Message
		for _, v := range vals {
			out = append(out, kafka.Message{Value: []byte(v)})
		}
		return out
	}
	// A leader change: b and c fail once (temporarily), then succeed; a
	// and d, acknowledged, are not written again.
	w := &flaky{fail: map[string]error{"b": kafka.NotLeaderForPartition, "c": kafka.LeaderNotAvailable}}
	var heard []int
	if err := topics.WriteAll(context.Background(), w, msgs("a", "b", "c", "d"), func(_ error, left int) { heard = append(heard, left) }); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"a", "b", "c", "d"}, {"b", "c"}}; !reflect.DeepEqual(w.calls, want) {
		t.Errorf("writes %v, want %v", w.calls, want)
	}
	if !reflect.DeepEqual(heard, []int{2}) {
		t.Errorf("retrying heard %v, want [2]", heard)
	}

	// Refused for good: no second write.
	w = &flaky{fail: map[string]error{"big": kafka.MessageSizeTooLarge}}
	if err := topics.WriteAll(context.Background(), w, msgs("big"), nil); err == nil || len(w.calls) != 1 {
		t.Errorf("permanent error: err %v after %d writes, want an error after 1", err, len(w.calls))
	}

	// The context ends while the brokers keep failing.
	ctx, cancel := context.WithCancel(context.Background())
	always := writerFunc(func(context.Context, ...kafka.Message) error { cancel(); return errors.New("connection refused") })
	if err := topics.WriteAll(ctx, always, msgs("x"), nil); err == nil {
		t.Error("WriteAll returned nil after its context ended with nothing acknowledged")
	}
}

type writerFunc func(context.Context, ...kafka.Message) error

func (f writerFunc) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	return f(ctx, msgs...)
}

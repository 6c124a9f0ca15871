package topics

import (
	"slices"
	"sync"

	"github.com/segmentio/kafka-go"
)

// Lag is a consumer group member's lag on its own partitions, summed by
// topic: per partition, the high watermark of its last fetch minus the
// next offset to commit. Both ends move: fetching raises the watermark, a
// commit raises the position, so while nothing can be stored the sum
// grows with what was fetched.
//
// A rebalance takes partitions away, and a member that went on counting
// them would report their last lag for as long as it runs (seen on a
// cluster: a lag of 18,417 for minutes while everything was stored). So
// the member says what it owns after each rebalance (Assign), and only
// those partitions count; a fetch of another one (queued before the
// rebalance) is ignored.
//
// Lag is safe for concurrent use.
type Lag struct {
	mu     sync.Mutex
	set    func(topic string, lag int64)
	topics []string
	parts  map[TopicPartition]*lagPosition
	// owned is the assignment; nil before the first Assign (then every
	// partition fetched counts).
	owned map[TopicPartition]bool
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int
}

type lagPosition struct {
	hwm, committed int64
}

// NewLag returns a Lag that calls set with a topic's sum whenever it may
// have changed; topics are the topics set is told about (each starts at
// 0).
func NewLag(set func(topic string, lag int64), topics ...string) *Lag {
	l := &Lag{set: set, topics: topics, parts: map[TopicPartition]*lagPosition{}}
	l.publish()
	return l
}

// Assign says which partitions the member owns now (by topic). The
// partitions it no longer owns stop counting; those it keeps keep their
// positions; a new one counts from its first fetch.
func (l *Lag) Assign(owned map[string][]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.owned = map[TopicPartition]bool{}
	for t, ps := range owned {
		for _, p := range ps {
			l.owned[TopicPartition{t, p}] = true
		}
	}
	for tp := range l.parts {
		if !l.owned[tp] {
			delete(l.parts, tp)
		}
	}
	l.publish()
}

// Fetched records a fetch of partition p of topic that returned a message
// at offset, with the partition's high watermark. The first fetch of a
// partition also gives its committed position: a group member starts
// reading right after the group's last commit.
func (l *Lag) Fetched(topic string, p int, offset, hwm int64) {
	tp := TopicPartition{topic, p}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owned != nil && !l.owned[tp] {
		return
	}
	pos := l.parts[tp]
	if pos == nil {
		pos = &lagPosition{committed: offset}
		l.parts[tp] = pos
	}
	pos.hwm = max(pos.hwm, hwm)
	l.publishTopic(topic)
}

// Committed records committed messages (the last stored message of each
// partition, committed as its offset + 1). A partition not counted (not
// fetched since it was assigned) is left out.
func (l *Lag) Committed(msgs []kafka.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		if pos := l.parts[TopicPartition{m.Topic, m.Partition}]; pos != nil {
			pos.committed = max(pos.committed, m.Offset+1)
			pos.hwm = max(pos.hwm, m.HighWaterMark)
		}
	}
	l.publish()
}

// Owned returns the last assignment by topic, partitions in order (nil
// before the first Assign).
func (l *Lag) Owned() map[string][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owned == nil {
		return nil
	}
	out := map[string][]int{}
	for tp := range l.owned {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// Of returns topic's sum (for tests and logs).
func (l *Lag) Of(topic string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sum(topic)
}

func (l *Lag) sum(topic string) int64 {
	var n int64
	for tp, pos := range l.parts {
		if tp.Topic == topic {
			n += max(0, pos.hwm-pos.committed)
		}
	}
	return n
}

func (l *Lag) publishTopic(topic string) { l.set(topic, l.sum(topic)) }

func (l *Lag) publish() {
	for _, t := range l.topics {
		l.publishTopic(t)
	}
}

package topics

import (
	"testing"

	"github.com/segmentio/kafka-go"
)

// TestLag follows one member through fetches, commits and a rebalance
// that takes a partition away: the partition's last lag stops counting at
// once, and a fetch or commit of it queued before the rebalance does not
// bring it back.
func TestLag(t *testing.T) {
	got := map[string]int64{}
	l := NewLag(func(topic string, n int64) { got[topic] = n }, "a", "b")
	if got["a"] != 0 || got["b"] != 0 || len(got) != 2 {
		t.Fatalf("a new Lag publishes %v, want a and b at 0", got)
	}
	type step struct {
		name  string
		do    func()
		wantA int64
		wantB int64
	}
	for _, s := range []step{
		{"fetch a/0 from its committed 10, end 50", func() { l.Fetched("a", 0, 10, 50) }, 40, 0},
		{"fetch a/1 from 0, end 30", func() { l.Fetched("a", 1, 0, 30) }, 70, 0},
		{"a later fetch raises the end, not the position", func() { l.Fetched("a", 0, 20, 60) }, 80, 0},
		{"fetch b/0", func() { l.Fetched("b", 0, 5, 9) }, 80, 4},
		{"commit a/0 up to 29", func() { l.Committed([]kafka.Message{{Topic: "a", Partition: 0, Offset: 29, HighWaterMark: 60}}) }, 60, 4},
		{"a commit does not move a position back", func() { l.Committed([]kafka.Message{{Topic: "a", Partition: 0, Offset: 3}}) }, 60, 4},
		{"rebalance: a/1 and b/0 taken away", func() { l.Assign(map[string][]int{"a": {0, 2}}) }, 30, 0},
		{"a queued fetch of a/1 is ignored", func() { l.Fetched("a", 1, 10, 40) }, 30, 0},
		{"a commit of a/1 is ignored", func() { l.Committed([]kafka.Message{{Topic: "a", Partition: 1, Offset: 12, HighWaterMark: 40}}) }, 30, 0},
		{"the new a/2 counts from its first fetch", func() { l.Fetched("a", 2, 100, 110) }, 40, 0},
		{"commit everything", func() {
			l.Committed([]kafka.Message{{Topic: "a", Partition: 0, Offset: 59}, {Topic: "a", Partition: 2, Offset: 109}})
		}, 0, 0},
		{"a/1 back: counts from its new first fetch, not its old position", func() {
			l.Assign(map[string][]int{"a": {0, 1, 2}})
			l.Fetched("a", 1, 35, 40)
		}, 5, 0},
	} {
		s.do()
		if got["a"] != s.wantA || got["b"] != s.wantB || l.Of("a") != s.wantA {
			t.Fatalf("%s: published a=%d b=%d (Of a=%d), want a=%d b=%d", s.name, got["a"], got["b"], l.Of("a"), s.wantA, s.wantB)
		}
	}
	if o := l.Owned(); len(o) != 1 || len(o["a"]) != 3 || o["a"][0] != 0 || o["a"][2] != 2 {
		t.Errorf("Owned() = %v, want map[a:[0 1 2]]", o)
	}
}

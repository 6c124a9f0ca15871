package stream

import (
	"sort"
	"time"
)

// Watermark computes how fresh a consumer's evidence is: the latest wall
// time T such that every message that was in the assigned partitions at T
// has been folded. A deadline at or before that time may be judged; a later
// one must wait, because an event proving the boundary may already sit in
// the topic, unread (our own lag is never a finding).
//
// It works from snapshots of the partitions' log end offsets: a snapshot
// taken by asking the brokers after time T holds every message produced
// before T (and perhaps a few more, which only makes it conservative). Once
// every partition's folded position reaches a snapshot's end offsets, the
// snapshot's time is safe.
//
// The zero Watermark is not usable; use NewWatermark. It is not safe for
// concurrent use.
type Watermark struct {
	next  map[int]int64 // partition -> next offset to fold
	snaps []snapshot    // pending, in time order
	safe  time.Time
	// left counts the partitions of the oldest pending snapshot not yet
	// folded up to its end offsets, so that Ready costs nothing per fold.
	left int
}

type snapshot struct {
	at   time.Time
	ends map[int]int64
}

// NewWatermark returns a Watermark for the given partitions, each starting
// at the offset it will be read from (everything before it counts as
// folded: the caller restored it from stored history).
func NewWatermark(start map[int]int64) *Watermark {
	w := &Watermark{next: make(map[int]int64, len(start))}
	for p, o := range start {
		w.next[p] = o
	}
	return w
}

// Folded records that the message at offset of partition has been folded.
// Offsets of a partition arrive in increasing order; a partition not
// assigned is ignored.
func (w *Watermark) Folded(partition int, offset int64) {
	n, ok := w.next[partition]
	if !ok || offset+1 <= n {
		return
	}
	w.next[partition] = offset + 1
	if w.left > 0 {
		if end, ok := w.snaps[0].ends[partition]; ok && n < end && offset+1 >= end {
			w.left--
		}
	}
}

// Ready reports whether the oldest pending snapshot has been reached: Safe
// would move forward now. It is cheap enough to ask after every fold.
func (w *Watermark) Ready() bool { return len(w.snaps) > 0 && w.left == 0 }

// Pending returns the time of the newest snapshot not reached yet (the
// zero time when none is pending): the safe time once the folds catch up.
func (w *Watermark) Pending() time.Time {
	if len(w.snaps) == 0 {
		return time.Time{}
	}
	return w.snaps[len(w.snaps)-1].at
}

// Snapshot records the log end offsets read from the brokers, asked at
// time at or later. Snapshots must come in time order; an earlier one is
// ignored. Partitions missing from ends are not constrained by it.
func (w *Watermark) Snapshot(at time.Time, ends map[int]int64) {
	if n := len(w.snaps); (n > 0 && at.Before(w.snaps[n-1].at)) || !at.After(w.safe) {
		return
	}
	cp := make(map[int]int64, len(ends))
	for p, o := range ends {
		if _, ok := w.next[p]; ok {
			cp[p] = o
		}
	}
	w.snaps = append(w.snaps, snapshot{at: at, ends: cp})
	if len(w.snaps) == 1 {
		w.left = w.unreached(cp)
	}
}

// Safe returns the watermark: the time of the latest snapshot whose end
// offsets have all been folded (the zero time before any). It never goes
// backwards.
func (w *Watermark) Safe() time.Time {
	i := 0
	for ; i < len(w.snaps); i++ {
		if !w.reached(w.snaps[i].ends) {
			break
		}
		w.safe = w.snaps[i].at
	}
	if i > 0 {
		n := copy(w.snaps, w.snaps[i:])
		clear(w.snaps[n:]) // the maps of reached snapshots
		w.snaps = w.snaps[:n]
		w.left = 0
		if len(w.snaps) > 0 {
			w.left = w.unreached(w.snaps[0].ends)
		}
	}
	return w.safe
}

func (w *Watermark) reached(ends map[int]int64) bool { return w.unreached(ends) == 0 }

// unreached counts the partitions of ends not folded up to their end.
func (w *Watermark) unreached(ends map[int]int64) int {
	n := 0
	for p, end := range ends {
		if w.next[p] < end {
			n++
		}
	}
	return n
}

// Behind returns, per assigned partition, how many messages of the newest
// snapshot are not folded yet: the consumer's lag as of that snapshot. A
// partition with no pending snapshot has folded everything of the last
// one reached: its lag is 0 (reported, so that a gauge of it goes down
// once the consumer catches up). Partitions are in order.
func (w *Watermark) Behind() []PartitionLag {
	var last map[int]int64
	if n := len(w.snaps); n > 0 {
		last = w.snaps[n-1].ends
	}
	out := make([]PartitionLag, 0, len(w.next))
	for p, next := range w.next {
		lag := int64(0)
		if end, ok := last[p]; ok {
			lag = max(0, end-next)
		}
		out = append(out, PartitionLag{Partition: p, Lag: lag})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

// Positions returns the next offset to fold of each partition: what may be
// committed once the work done for the folded messages is durable.
func (w *Watermark) Positions() map[int]int64 {
	out := make(map[int]int64, len(w.next))
	for p, o := range w.next {
		out[p] = o
	}
	return out
}

// PartitionLag is how many messages of one partition are not folded yet.
type PartitionLag struct {
	Partition int
	Lag       int64
}

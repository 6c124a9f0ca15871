package stream

import (
	"reflect"
	"testing"
	"time"
)

func at(s int) time.Time { return time.Date(2026, 10, 1, 0, 0, s, 0, time.UTC) }

func TestWatermark(t *testing.T) {
	type step struct {
		fold   [2]int64      // partition, offset; partition -1 = none
		snap   map[int]int64 // snapshot taken at time snapAt
		snapAt int           // seconds
		want   int           // safe, seconds; -1 = zero time
		behind map[int]int64 // optional
	}
	tests := []struct {
		name  string
		start map[int]int64
		steps []step
	}{
		{
			name:  "caught up at once: an empty or fully read partition is safe at the snapshot",
			start: map[int]int64{0: 5, 1: 0},
			steps: []step{
				{fold: [2]int64{-1}, snap: map[int]int64{0: 5, 1: 0}, snapAt: 10, want: 10, behind: map[int]int64{0: 0, 1: 0}},
			},
		},
		{
			name:  "a backlog holds the watermark until every partition reaches the snapshot",
			start: map[int]int64{0: 0, 1: 0},
			steps: []step{
				{fold: [2]int64{-1}, snap: map[int]int64{0: 3, 1: 2}, snapAt: 10, want: -1, behind: map[int]int64{0: 3, 1: 2}},
				{fold: [2]int64{0, 0}, want: -1},
				{fold: [2]int64{0, 1}, want: -1},
				{fold: [2]int64{0, 2}, want: -1}, // partition 1 still behind
				{fold: [2]int64{1, 0}, snap: map[int]int64{0: 4, 1: 2}, snapAt: 20, want: -1, behind: map[int]int64{0: 1, 1: 1}},
				{fold: [2]int64{1, 1}, want: 10, behind: map[int]int64{0: 1, 1: 0}}, // first snapshot reached, second not (partition 0 has 4)
				// Caught up: no snapshot pending, every partition's lag is 0
				// (not left out, which would leave a gauge at its last value).
				{fold: [2]int64{0, 3}, want: 20, behind: map[int]int64{0: 0, 1: 0}},
			},
		},
		{
			name:  "the watermark never goes backwards, and old snapshots are ignored",
			start: map[int]int64{0: 0},
			steps: []step{
				{fold: [2]int64{-1}, snap: map[int]int64{0: 0}, snapAt: 30, want: 30},
				{fold: [2]int64{-1}, snap: map[int]int64{0: 9}, snapAt: 20, want: 30},
				{fold: [2]int64{-1}, snap: map[int]int64{0: 1}, snapAt: 40, want: 30},
				{fold: [2]int64{0, 0}, want: 40},
			},
		},
		{
			name:  "partitions not owned do not hold it back",
			start: map[int]int64{2: 7},
			steps: []step{
				{fold: [2]int64{5, 100}, snap: map[int]int64{2: 7, 5: 1000}, snapAt: 10, want: 10},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWatermark(tt.start)
			var prev time.Time
			for i, s := range tt.steps {
				if s.fold[0] >= 0 {
					w.Folded(int(s.fold[0]), s.fold[1])
				}
				if s.snap != nil {
					w.Snapshot(at(s.snapAt), s.snap)
				}
				want := time.Time{}
				if s.want >= 0 {
					want = at(s.want)
				}
				// Ready says, without a scan, whether Safe is about to move:
				// the member advances on it after every fold.
				ready := w.Ready()
				got := w.Safe()
				if !got.Equal(want) {
					t.Fatalf("step %d: Safe() = %v, want %v", i, got, want)
				}
				if ready != got.After(prev) {
					t.Fatalf("step %d: Ready() = %v before Safe() moved from %v to %v", i, ready, prev, got)
				}
				prev = got
				if s.behind != nil {
					got := map[int]int64{}
					for _, l := range w.Behind() {
						got[l.Partition] = l.Lag
					}
					if !reflect.DeepEqual(got, s.behind) {
						t.Fatalf("step %d: Behind() = %v, want %v", i, got, s.behind)
					}
				}
			}
		})
	}
}

func TestWatermarkPositions(t *testing.T) {
	w := NewWatermark(map[int]int64{0: 10, 1: 0})
	w.Folded(0, 10)
	w.Folded(0, 11)
	w.Folded(0, 3) // an older offset (a re-read) never moves the position back
	w.Folded(9, 50)
	if got, want := w.Positions(), map[int]int64{0: 12, 1: 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Positions() = %v, want %v", got, want)
	}
}

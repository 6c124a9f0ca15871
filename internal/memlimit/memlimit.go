// Package memlimit keeps a long-running process's soft memory limit
// (runtime/debug.SetMemoryLimit) above what the process holds.
//
// A fixed soft limit bounds the heap's peak while what is live is small:
// the collector runs before the heap doubles. It becomes a trap once what
// is live grows past it (a detector holding more open batches than the
// limit was sized for, a diagnose of a larger file): the collector then
// runs back to back, up to half the CPU, and the process crawls while it
// keeps growing. A Limiter treats the limit as a floor: it raises the
// limit with the live heap, leaving it room to grow by a fraction before
// the next collection, and lowers it back to the floor when the heap
// shrinks.
package memlimit

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// liveHeap is the runtime metric of the heap live after the last
// collection: what the process holds, not what it has allocated since.
const liveHeap = "/gc/heap/live:bytes"

// Limiter sets the soft memory limit from the live heap.
type Limiter struct {
	floor    int64
	headroom float64
	sample   []metrics.Sample
}

// New returns a Limiter that keeps the soft limit at floor, or at the
// live heap plus headroom times it when that is more (headroom 0.5: the
// heap may grow by half of what is live before the limit makes the
// collector run).
func New(floor int64, headroom float64) *Limiter {
	return &Limiter{floor: floor, headroom: headroom, sample: []metrics.Sample{{Name: liveHeap}}}
}

// Limit returns the limit for a live heap of live bytes.
func (l *Limiter) Limit(live uint64) int64 {
	return max(l.floor, int64(float64(live)*(1+l.headroom)))
}

// Adjust sets the soft limit from the live heap of the last collection
// and returns it.
func (l *Limiter) Adjust() int64 {
	metrics.Read(l.sample)
	var live uint64
	if l.sample[0].Value.Kind() == metrics.KindUint64 {
		live = l.sample[0].Value.Uint64()
	}
	limit := l.Limit(live)
	debug.SetMemoryLimit(limit)
	return limit
}

// Run adjusts the limit now and every interval until ctx ends. Between
// two adjustments the live heap may outgrow the limit; the interval
// bounds how long the collector runs back to back when it does.
func (l *Limiter) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		l.Adjust()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

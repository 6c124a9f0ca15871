package consumer

import (
	"context"
	"sync"
)

// budget bounds the message bytes the pipeline holds at once, from fetch
// to commit: the fetch loop takes each message's bytes before adding it to
// a batch, the store stage gives a batch's bytes back once it is stored.
// Without it memory was bounded by message counts only, and 1,500 valid
// events of ~1 MB took the ingester to 3.7 GB.
type budget struct {
	mu    sync.Mutex
	used  int64
	limit int64
	// wake is closed (and replaced) on every release.
	wake chan struct{}
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, wake: make(chan struct{})}
}

// acquire takes n bytes, waiting until they fit or ctx is done (then it
// returns false and takes nothing). A message larger than the whole budget
// still passes when nothing else is held, so it can never wait for ever.
func (b *budget) acquire(ctx context.Context, n int64) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return true
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
}

// force takes n bytes without waiting: for the messages a shutdown still
// flushes.
func (b *budget) force(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// release gives n bytes back and wakes the waiters.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// held returns the bytes taken.
func (b *budget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

package consumer

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Fetch responses are read into buffers the records point into (they are
// decoded in place), recycled once the last of their records is decoded,
// and bounded by bytes. One new buffer per response made the ingester
// allocate its input again (about 300 MB per 1M events of the benchmark):
// that garbage let Go's heap grow to twice what is live between
// collections. A response holds at least one whole record batch, so its
// size is the producer's batch size as much as fetchMaxBytes (the
// benchmark's loader writes batches of several MiB): the buffers come in
// size classes.

// smallResponse: a response up to this size gets a buffer of its own size,
// not a recycled one, so that the short responses of a partition read at
// its end (a few records each) do not each hold a larger buffer (and its
// share of the budget) until they are decoded.
const smallResponse = 64 << 10

// respBudget bounds the bytes of the response buffers in use at once:
// those being read, and those whose records wait in the runs queued for
// the fetch loop, in the chunk being gathered, in the chunks waiting for a
// decode worker and in the chunks being decoded. It keeps four fetchers
// reading responses of several MiB while the decode workers are busy. A
// fetcher reserves before it sends a fetch what its partition's last
// response took; a response larger than that takes the rest without
// waiting (it has been read already), so the bytes in use exceed the
// budget by at most one response per fetcher.
const respBudget = 32 << 20

// Size classes of the recycled buffers: 2^k and 1.5 * 2^k bytes, from
// 2^minClassShift up to what a response can take (maxFetchResponse); a
// buffer wastes at most a third of itself.
const (
	minClassShift = 17
	// numClasses covers 128 KiB to 16 MiB (maxFetchResponse).
	numClasses = 15
)

// classOf returns the class of a buffer for n bytes (n > smallResponse)
// and its size.
func classOf(n int) (int, int) {
	if n <= 1<<minClassShift {
		return 0, 1 << minClassShift
	}
	shift := bits.Len(uint(n-1)) - 1 // 2^shift < n <= 2^(shift+1)
	c := 2 * (shift - minClassShift)
	if half := 3 << (shift - 1); n <= half {
		return c + 1, half
	}
	return c + 2, 2 << shift
}

// respPool hands out response buffers within respBudget and takes them
// back. The free buffers count too: a buffer given back is kept only while
// the buffers in use and the free ones together fit in respBudget (the
// responses' sizes wander from class to class with the producers' batches,
// and free buffers of every class they visited would add up).
type respPool struct {
	budget *budget
	mu     sync.Mutex
	free   [numClasses][]*respBuf
	// freeBytes is the capacity of the free buffers.
	freeBytes int64
}

func newRespPool() *respPool {
	return &respPool{budget: newBudget(respBudget)}
}

// reserve takes n bytes of the budget (what the partition's last response
// took; any size for the first), waiting until they fit or ctx is done
// (then it returns false): before a fetch is sent, so that a fetcher waits
// with no request outstanding. The reservation becomes a buffer (get) or
// is given back (unreserve).
func (p *respPool) reserve(ctx context.Context, n int64) bool {
	return p.budget.acquire(ctx, n)
}

func (p *respPool) unreserve(n int64) { p.budget.release(n) }

// get turns a reservation of reserved bytes into a buffer of n bytes, held
// once (by the fetcher reading into it).
func (p *respPool) get(n int, reserved int64) *respBuf {
	r := p.alloc(n)
	switch {
	case r.cost < reserved:
		p.budget.release(reserved - r.cost)
	case r.cost > reserved:
		p.budget.force(r.cost - reserved)
	}
	r.pool = p
	r.refs.Store(1)
	return r
}

func (p *respPool) alloc(n int) *respBuf {
	if n <= smallResponse {
		return &respBuf{b: make([]byte, n), cost: int64(n), class: -1}
	}
	c, size := classOf(n)
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		r := p.free[c][k-1]
		p.free[c][k-1] = nil
		p.free[c] = p.free[c][:k-1]
		p.freeBytes -= r.cost
		p.mu.Unlock()
		r.b = r.b[:n]
		return r
	}
	p.mu.Unlock()
	return &respBuf{b: make([]byte, n, size), cost: int64(size), class: c}
}

// put takes back a buffer nothing points into any more.
func (p *respPool) put(r *respBuf) {
	if r.class >= 0 {
		p.mu.Lock()
		// budget.held still counts r here.
		if p.freeBytes+p.budget.held() <= respBudget {
			p.free[r.class] = append(p.free[r.class], r)
			p.freeBytes += r.cost
		} // else: garbage now
		p.mu.Unlock()
	}
	p.budget.release(r.cost)
}

// respBuf is one fetch response's bytes and how many holders it has: the
// fetcher while it hands the response's records over, and each record
// handed over until it is decoded.
type respBuf struct {
	b     []byte
	refs  atomic.Int64
	cost  int64 // what it takes of the budget: its capacity
	class int   // its size class; -1: not recycled
	pool  *respPool
}

// unref drops n holds; the last one returns the buffer to its pool.
func (r *respBuf) unref(n int64) {
	if r.refs.Add(-n) == 0 {
		r.pool.put(r)
	}
}

// unrefRecords drops the hold each of recs has on its response buffer
// (none for a record that came without one), once per run of records of
// the same buffer.
func unrefRecords(recs []record) {
	for i := 0; i < len(recs); {
		b, j := recs[i].buf, i+1
		for j < len(recs) && recs[j].buf == b {
			j++
		}
		if b != nil {
			b.unref(int64(j - i))
		}
		i = j
	}
}

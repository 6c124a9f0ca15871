package consumer

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// TestClassOf: every response fits its class, a class wastes at most a
// third of itself, and the largest response has a class.
func TestClassOf(t *testing.T) {
	for _, n := range []int{smallResponse + 1, 1 << minClassShift, 1<<minClassShift + 1, 3 << 16, 3<<16 + 1,
		fetchMaxBytes, fetchMaxBytes + 1, 6_000_000, maxFetchResponse - 1, maxFetchResponse} {
		c, size := classOf(n)
		if c < 0 || c >= numClasses {
			t.Fatalf("classOf(%d) = class %d, want 0 to %d", n, c, numClasses-1)
		}
		if size < n || (n > 1<<minClassShift && 3*(size-n) > size) {
			t.Errorf("classOf(%d): size %d, want at least %d and at most a third more than needed", n, size, n)
		}
		if c2, size2 := classOf(size); c2 != c || size2 != size {
			t.Errorf("classOf(%d) = %d, %d; classOf(%d) = %d, %d: a class's size is in that class", n, c, size, size, c2, size2)
		}
	}
}

// TestRespPool: a buffer given back is the one a later response of its
// class gets; the budget is taken before a fetch and given back with the
// buffer; a reservation waits while the budget is held.
func TestRespPool(t *testing.T) {
	p := newRespPool()
	ctx := context.Background()
	if !p.reserve(ctx, fetchMaxBytes) {
		t.Fatal("reserve on an empty budget failed")
	}
	r := p.get(fetchMaxBytes, fetchMaxBytes)
	if len(r.b) != fetchMaxBytes || p.budget.held() != r.cost {
		t.Fatalf("buffer of %d bytes, budget %d held; want %d and %d", len(r.b), p.budget.held(), fetchMaxBytes, r.cost)
	}
	r.unref(1)
	if got := p.budget.held(); got != 0 {
		t.Fatalf("budget held after the buffer came back: %d, want 0", got)
	}
	p.reserve(ctx, 100)
	r2 := p.get(fetchMaxBytes-10, 100) // larger than reserved: takes the rest
	if r2 != r || len(r2.b) != fetchMaxBytes-10 {
		t.Fatalf("the next response of the class got a new buffer (or %d bytes), want the recycled one", len(r2.b))
	}
	if got := p.budget.held(); got != r2.cost {
		t.Fatalf("budget held %d, want the buffer's %d", got, r2.cost)
	}
	// A small response gets a buffer of its size, not a recycled one.
	p.reserve(ctx, fetchMaxBytes)
	s := p.get(100, fetchMaxBytes)
	if cap(s.b) != 100 || p.budget.held() != r2.cost+100 {
		t.Fatalf("small response: capacity %d, budget %d; want 100 and %d", cap(s.b), p.budget.held(), r2.cost+100)
	}
	s.unref(1)

	// Fill the budget: a further reservation waits (here: until its
	// context ends), and passes once a buffer comes back.
	for p.budget.held()+r2.cost <= respBudget {
		p.budget.force(r2.cost)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if p.reserve(done, r2.cost) {
		t.Fatal("a reservation passed a full budget")
	}
	p.budget.release(p.budget.held() - r2.cost)
	if !p.reserve(ctx, r2.cost) {
		t.Fatal("a reservation failed with room in the budget")
	}
	p.unreserve(r2.cost)
	r2.unref(1)
	if got := p.budget.held(); got != 0 {
		t.Fatalf("budget held at the end: %d, want 0", got)
	}

	// Free buffers of every class add up to at most the budget.
	var held []*respBuf
	for n := smallResponse + 1; n <= maxFetchResponse; n = n*5/4 + 1 {
		p.budget.force(int64(n)) // more than the budget: what the fetchers could take at worst
		held = append(held, p.get(n, int64(n)))
	}
	for _, r := range held {
		r.unref(1)
	}
	if p.freeBytes > respBudget || p.freeBytes == 0 || p.budget.held() != 0 {
		t.Fatalf("%d bytes of free buffers, %d held; want 1 to %d and 0", p.freeBytes, p.budget.held(), respBudget)
	}
}

// TestHandOverHolds: every record handed over holds its response until
// it is decoded, and a response comes back to the pool (its budget given
// back) once its last record is, whoever drops the last hold.
func TestHandOverHolds(t *testing.T) {
	g := &group{c: &Consumer{}, out: make(chan fetched, 16), spare: make(chan []record, 16), bufs: newRespPool()}
	const n = 3*chunkSize + 10
	data := encodeBatch(t, 0, n, 0, false, false)
	// A response of a recycled size: the records and what follows them.
	size := max(len(data), smallResponse+1)
	g.bufs.reserve(context.Background(), int64(size))
	buf := g.bufs.get(size, int64(size))
	copy(buf.b, data)
	_, next, err := g.handOver(context.Background(), nil, fetchResult{records: buf.b[:len(data)], buf: buf}, 0, 0)
	if err != nil || next != n {
		t.Fatalf("hand-over: next %d, %v; want %d", next, err, n)
	}
	if got := buf.refs.Load(); got != n+1 {
		t.Fatalf("holds on the response after the hand-over: %d, want %d (one a record and the fetcher's)", got, n+1)
	}
	buf.unref(1) // the fetcher is done with it
	close(g.out)
	var runs [][]record
	for f := range g.out {
		runs = append(runs, f.recs)
	}
	for i, run := range runs {
		if g.bufs.budget.held() == 0 {
			t.Fatalf("the response came back before run %d of %d was decoded", i, len(runs))
		}
		if string(run[0].value) != "v"+itoa(run[0].offset) {
			t.Fatalf("run %d: record at offset %d has value %q", i, run[0].offset, run[0].value)
		}
		unrefRecords(run)
	}
	if got := g.bufs.budget.held(); got != 0 {
		t.Fatalf("budget held once every record was decoded: %d, want 0", got)
	}
	if got := len(g.bufs.free[buf.class]); got != 1 || g.bufs.freeBytes != buf.cost {
		t.Fatalf("free buffers of the response's class: %d, want 1", got)
	}

	// A hand-over cut short by its context gives back the holds of the
	// records it did not hand over.
	g.out = make(chan fetched) // nobody reads it
	g.bufs.reserve(context.Background(), int64(len(data)))
	buf = g.bufs.get(len(data), int64(len(data)))
	copy(buf.b, data)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := g.handOver(ctx, nil, fetchResult{records: buf.b, buf: buf}, 0, 0); err == nil {
		t.Fatal("a hand-over with its context done returned no error")
	}
	if got := buf.refs.Load(); got != 1 {
		t.Fatalf("holds after a cut-short hand-over: %d, want 1 (the fetcher's)", got)
	}
	buf.unref(1)
	if got := g.bufs.budget.held(); got != 0 {
		t.Fatalf("budget held at the end: %d, want 0", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestDeadLetterOwnsPayload: a dead letter keeps its payload after the
// response it came in is recycled (the buffer is read into again for the
// next response).
func TestDeadLetterOwnsPayload(t *testing.T) {
	c := &Consumer{dec: make([]model.Decoder, 1)}
	d := &decoded{evb: make([]schema.EventBatch, 1), dead: make([][]schema.DeadLetter, 1), last: []kafka.Message{}}
	d.reset(time.Unix(1790000000, 0))
	resp := []byte(`{"not an event": true}`)
	want := string(resp)
	c.decodeChunk(d, 0, []record{{key: resp[:5], value: resp, offset: 7}})
	if len(d.dead[0]) != 1 {
		t.Fatalf("%d dead letters, want 1", len(d.dead[0]))
	}
	copy(resp, bytes.Repeat([]byte("x"), len(resp))) // the next response
	if got := string(d.dead[0][0].Payload); got != want {
		t.Fatalf("dead letter's payload after its response was reused: %q, want %q", got, want)
	}
}

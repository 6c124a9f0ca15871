package serve

import (
	"sync"

	"github.com/handoff-dev/handoff/model"
)

// A read of every pipeline's events (the all-pipelines grid) passes a
// hundred thousand rows at 10,000 pipelines, and each costs about as much
// to scan out of the driver as to fold into the batches. One goroutine
// folding behind the read was the longest part of the page, with the
// read waiting on it. So the batches are kept in shards by pipeline
// (shardOf), each its own batches.Set folded on a goroutine of its own
// (foldShards), then listed and diagnosed on its own too (listBatches):
// a batch's diagnosis depends only on its own pipeline's batches, first
// date, re-runs and heartbeats (the upstream rule, which looks at other
// pipelines, is not applied to lists), so a shard's Set says of each of
// its batches what one Set of every pipeline says. A shard's events reach
// it in the order read, in blocks.

// foldBlock is how many events go to a shard at a time.
const foldBlock = 512

// maxShards bounds the shards of an all-pipelines read: more than the
// machine's cores only adds goroutines.
const maxShards = 8

// shardOf is the shard of pipeline among n (FNV-1a of the name): the
// same for its events, its census row and its heartbeats.
func shardOf(pipeline string, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(pipeline); i++ {
		h ^= uint32(pipeline[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// foldShards folds events on one goroutine per shard, each shard's in
// the order given to add.
type foldShards struct {
	fold   func(shard int, e *model.Event)
	shards []foldShard
	// last and lastShard: the pipeline of the event before and its shard
	// (rows come in runs of one pipeline).
	last      string
	lastShard int
}

// foldShard is one shard's queue.
type foldShard struct {
	work chan []model.Event
	free chan []model.Event
	done chan struct{}
	buf  []model.Event
}

// newFoldShards starts n goroutines that call fold for each event added
// to their shard; the caller must call wait, whatever happens to the read.
func newFoldShards(n int, fold func(shard int, e *model.Event)) *foldShards {
	f := &foldShards{fold: fold, shards: make([]foldShard, n), lastShard: -1}
	for i := range f.shards {
		sh := &f.shards[i]
		sh.work, sh.free, sh.done = make(chan []model.Event, 4), make(chan []model.Event, 4), make(chan struct{})
		sh.buf = foldBuffer()
		go func() {
			defer close(sh.done)
			for b := range sh.work {
				for j := range b {
					f.fold(i, &b[j])
				}
				select {
				case sh.free <- b[:0]:
				default:
					keepFoldBuffer(b)
				}
			}
		}()
	}
	return f
}

// add queues a copy of e for its pipeline's shard.
func (f *foldShards) add(e *model.Event) {
	i := f.lastShard
	if i < 0 || e.Pipeline != f.last {
		i = shardOf(e.Pipeline, len(f.shards))
		f.last, f.lastShard = e.Pipeline, i
	}
	sh := &f.shards[i]
	sh.buf = append(sh.buf, *e)
	if len(sh.buf) < foldBlock {
		return
	}
	sh.work <- sh.buf
	select {
	case sh.buf = <-sh.free:
	default:
		sh.buf = foldBuffer()
	}
}

// foldBuffers keeps the blocks of finished reads for the next: a day of
// every pipeline queues megabytes of them.
var foldBuffers sync.Pool

// foldBuffer is an empty block, a kept one when there is one.
func foldBuffer() []model.Event {
	if b, ok := foldBuffers.Get().(*[]model.Event); ok {
		return (*b)[:0]
	}
	return make([]model.Event, 0, foldBlock)
}

// keepFoldBuffer keeps b for another read, cleared: a kept block holds
// no string of the read before.
func keepFoldBuffer(b []model.Event) {
	if cap(b) != foldBlock {
		return
	}
	b = b[:foldBlock]
	clear(b)
	b = b[:0]
	foldBuffers.Put(&b)
}

// wait folds what is queued and returns once every event added is folded.
func (f *foldShards) wait() {
	for i := range f.shards {
		sh := &f.shards[i]
		if len(sh.buf) > 0 {
			sh.work <- sh.buf
			sh.buf = nil
		}
		close(sh.work)
	}
	for i := range f.shards {
		sh := &f.shards[i]
		<-sh.done
		close(sh.free)
		for b := range sh.free {
			keepFoldBuffer(b)
		}
	}
	f.last = ""
}

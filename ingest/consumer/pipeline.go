package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/store/schema"
)

// decoded is a batch: its events as columns (one EventBatch per decode
// worker) and its dead letters, filled chunk by chunk while the batch is
// fetched. A few are recycled between the fetch loop and the store stage.
type decoded struct {
	// trigger is what cut the batch; bytes is what its messages took from
	// the in-flight budget, given back once the batch is stored.
	trigger string
	bytes   int64
	// n is the number of messages and last the last message read of every
	// partition in the batch (what to commit, without key and value): the
	// messages themselves are dropped once decoded.
	n               int
	last            []kafka.Message
	evb             []schema.EventBatch
	dead            [][]schema.DeadLetter
	valid, rejected int
	// nowMS is the batch's ingested_ms: when its first message was read.
	nowMS int64
	// chunks counts the batch's chunks still being decoded.
	chunks sync.WaitGroup
	// cut is when the batch was cut, decodeTime how long its last chunks
	// took to decode after that.
	cut        time.Time
	decodeTime time.Duration
}

// reset prepares a recycled batch for the next messages.
func (d *decoded) reset(now time.Time) {
	for i := range d.evb {
		d.evb[i].Reset()
		d.dead[i] = d.dead[i][:0]
	}
	d.trigger, d.bytes, d.n, d.last = "", 0, 0, d.last[:0]
	d.valid, d.rejected = 0, 0
	d.nowMS = now.UnixMilli()
}

// chunk is a run of a batch's messages, decoded by one worker into that
// worker's columns of the batch.
type chunk struct {
	d    *decoded
	msgs []record
}

// chunkSize and chunkBytes bound how many messages (and bytes of keys and
// values) the fetch loop gathers before it hands them to a decode worker.
// Messages are decoded while the batch is still being fetched, so the
// ingester holds a few chunks of raw messages, not whole batches of them
// (at 50,000 messages of ~300 bytes, a batch of kafka.Message values and
// their keys and values took ~30 MB).
const (
	chunkSize  = 1024
	chunkBytes = 1 << 20
)

// Run consumes until ctx is done, then flushes what it holds, commits and
// returns nil. The last flush may take up to the configured shutdown
// timeout; if it cannot finish, Run returns an error and the unstored
// messages stay uncommitted (they are consumed again on the next start).
func (c *Consumer) Run(ctx context.Context) error {
	grp, err := c.newGroup()
	if err != nil {
		return err
	}
	c.grp = grp
	// Flushes outlive ctx by up to ShutdownTimeout, so a SIGTERM still
	// stores and commits what was read.
	flushCtx, cancelFlush := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelFlush()
	stopAfter := context.AfterFunc(ctx, func() {
		time.AfterFunc(c.cfg.ShutdownTimeout, cancelFlush)
	})
	defer stopAfter()
	retained := c.startRetention(ctx)
	defer func() { <-retained }()

	c.log.Info("ingest running", "topic", c.cfg.Kafka.Topic, "group", c.cfg.Group, "brokers", c.cfg.Kafka.Brokers,
		"clickhouse", c.cfg.ClickHouse.Addr, "database", c.cfg.ClickHouse.Database, "batch_size", c.cfg.BatchSize,
		"batch_bytes", c.cfg.BatchBytes.String(), "flush_interval", c.cfg.FlushInterval, "decode_workers", c.workers)

	// The partitions' fetchers read fetch responses and hand them over in
	// runs of records (fetch.go); this loop takes the records one by one
	// and cuts batches; the decode workers decode each batch's chunks into
	// its columns while it is being fetched; the finish stage waits for a
	// cut batch's last chunks and passes it on in order; the store stage
	// writes and commits batches, in order. The group is left after the
	// last flush has committed: its generation is what commits go through.
	groupDone := make(chan struct{})
	go func() {
		defer close(groupDone)
		grp.run(ctx)
	}()
	defer func() {
		grp.close()
		<-groupDone
	}()
	src := fetchSource{in: grp.out, spare: grp.spare, hwm: map[int]int64{}, lag: c.lag, topic: c.cfg.Kafka.Topic}

	chunks := make(chan chunk, 2*c.workers)
	spare := make(chan []record, 4*c.workers)
	var workers sync.WaitGroup
	for w := 0; w < c.workers; w++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for ch := range chunks {
				c.decodeChunk(ch.d, w, ch.msgs)
				// The events own copies of their strings and dead letters
				// of their payload: the messages, and the responses they
				// point into, are not needed any more.
				unrefRecords(ch.msgs)
				clear(ch.msgs)
				select {
				case spare <- ch.msgs[:0]:
				default:
				}
				ch.d.chunks.Done()
			}
		}()
	}
	batches := make(chan *decoded, 1)
	decodedCh := make(chan *decoded, 1)
	// In use at once: up to coalesce being stored, the rest waiting in the
	// next INSERT or being filled. Each holds a batch's columns (~25 MB at
	// 50,000 events of ~300 bytes), the largest part of the ingester's
	// memory; more did not store faster.
	free := make(chan *decoded, 2*coalesce)
	for i := 0; i < cap(free); i++ {
		free <- &decoded{evb: make([]schema.EventBatch, c.workers), dead: make([][]schema.DeadLetter, c.workers)}
	}
	go finishStage(batches, decodedCh)
	flushDone := make(chan error, 1)
	go func() { flushDone <- c.storeStage(flushCtx, decodedCh, free) }()

	var d *decoded // the batch being fetched; nil while there is none
	var cur []record
	var curBytes int64
	dispatch := func() {
		if len(cur) == 0 {
			return
		}
		d.chunks.Add(1)
		chunks <- chunk{d: d, msgs: cur}
		curBytes = 0
		select {
		case cur = <-spare:
		default:
			cur = make([]record, 0, chunkSize)
		}
	}
	// bctx ends FlushInterval after the first message of the current
	// batch (the age trigger); it is ctx while the batch is empty.
	bctx, bcancel := ctx, context.CancelFunc(func() {})
	send := func(trigger string) bool {
		bcancel()
		bctx, bcancel = ctx, func() {}
		if d == nil {
			return true
		}
		dispatch()
		d.trigger, d.cut = trigger, time.Now()
		select {
		case batches <- d:
			d = nil
			return true
		case <-ctx.Done():
			return false
		}
	}
	add := func(m *record, sz int64) {
		if d == nil {
			d = <-free // the store stage gives every batch back, even after a failure
			d.reset(time.Now())
		}
		cur = append(cur, *m)
		d.n++
		d.bytes += sz
		d.last = lastOffset(d.last, c.cfg.Kafka.Topic, m, src.hwm[int(m.partition)])
		curBytes += sz
		if len(cur) >= chunkSize || curBytes >= chunkBytes {
			dispatch()
		}
	}
loop:
	for {
		// When no run is waiting, the records gathered so far go to a
		// decode worker at once: they hold response buffers, which the
		// fetchers may be waiting for (respBudget).
		m := src.next(bctx, dispatch)
		if m == nil {
			if ctx.Err() != nil {
				break loop
			}
			// the batch's age
			if !send("age") {
				break loop
			}
			continue
		}
		// Cut the batch before this message would take it over its
		// bytes; then wait until the pipeline has room for it (while
		// waiting, the batch's age still cuts it).
		sz := int64(len(m.key) + len(m.value))
		stop := d != nil && d.bytes+sz > int64(c.cfg.BatchBytes) && !send("bytes")
		for !stop && !c.inflight.acquire(bctx, sz) {
			if ctx.Err() != nil || !send("age") {
				stop = true
			}
		}
		if stop {
			// Shutting down: the message is flushed with the rest.
			c.inflight.force(sz)
			add(m, sz)
			break loop
		}
		fresh := d == nil
		add(m, sz)
		if fresh {
			// The batch's age counts from when it got its first message,
			// after add waited for a free batch: counted from before, a
			// pipeline waiting for ClickHouse cut every batch it got back
			// at once, by age, with a message or a run in it, and stored
			// its rows in twice the INSERTs and parts.
			bctx, bcancel = context.WithTimeout(ctx, c.cfg.FlushInterval)
		}
		if d.n >= c.cfg.BatchSize && !send("size") {
			break loop
		}
	}
	bcancel()
	if d != nil {
		dispatch()
		d.trigger, d.cut = "shutdown", time.Now()
		batches <- d
	}
	close(batches)
	close(chunks) // every chunk is dispatched; the workers finish them
	err = <-flushDone
	workers.Wait()
	if err != nil {
		c.log.Error("ingest stopped with unstored messages; they stay uncommitted and are consumed again on the next start", "err", err)
		return err
	}
	c.log.Info("ingest stopped: flushed and committed")
	return nil
}

// finishStage passes cut batches on in order, each once its last chunks
// are decoded.
func finishStage(in <-chan *decoded, out chan<- *decoded) {
	defer close(out)
	for d := range in {
		d.chunks.Wait()
		d.decodeTime = time.Since(d.cut)
		for i := range d.evb {
			d.valid += d.evb[i].Len()
			d.rejected += len(d.dead[i])
		}
		out <- d
	}
}

// fetchSource gives the fetch loop the fetchers' records one by one.
type fetchSource struct {
	in    <-chan fetched
	spare chan<- []record
	cur   fetched
	i     int
	// hwm is the high watermark last seen per partition (what a batch's
	// last message of the partition carries); lag is told of every run,
	// not every message.
	hwm   map[int]int64
	lag   *topics.Lag
	topic string
}

// next returns the next record, or nil when ctx ended first; idle (when
// not nil) is called before it waits for a run. The record stays valid
// until the next call.
func (s *fetchSource) next(ctx context.Context, idle func()) *record {
	for s.i >= len(s.cur.recs) {
		if s.cur.recs != nil {
			clear(s.cur.recs)
			select {
			case s.spare <- s.cur.recs[:0]:
			default:
			}
			s.cur.recs = nil
		}
		var f fetched
		select {
		case f = <-s.in:
		default:
			if idle != nil {
				idle()
			}
			select {
			case f = <-s.in:
			case <-ctx.Done():
				return nil
			}
		}
		s.cur, s.i = f, 0
		s.hwm[f.partition] = f.hwm
		if len(f.recs) > 0 {
			s.lag.Fetched(s.topic, f.partition, f.recs[0].offset, f.hwm)
		}
	}
	s.i++
	return &s.cur.recs[s.i-1]
}

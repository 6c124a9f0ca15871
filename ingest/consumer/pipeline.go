package consumer

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/schema"
)

// pending is a cut batch of fetched messages on its way from the fetch
// loop to the decode stage, with what made the loop cut it.
type pending struct {
	msgs    []kafka.Message
	trigger string
	// bytes is what the messages took from the in-flight budget, given
	// back once the batch is stored.
	bytes int64
}

// decoded is a batch after decoding: events as columns (one EventBatch per
// decode worker) and the dead letters. A few are recycled between the
// decode and store stages.
type decoded struct {
	pending
	// n is the number of messages and last the last message read of every
	// partition in the batch (what to commit, without key and value): the
	// messages themselves are dropped once decoded.
	n               int
	last            []kafka.Message
	evb             []schema.EventBatch
	dead            [][]schema.DeadLetter
	valid, rejected int
	start           time.Time
	decodeTime      time.Duration
}

// Run consumes until ctx is done, then flushes what it holds, commits and
// returns nil. The last flush may take up to the configured shutdown
// timeout; if it cannot finish, Run returns an error and the unstored
// messages stay uncommitted (they are consumed again on the next start).
func (c *Consumer) Run(ctx context.Context) error {
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

	c.log.Info("ingest running", "topic", c.cfg.Topic, "group", c.cfg.Group, "brokers", c.cfg.Brokers,
		"clickhouse", c.cfg.ClickHouseAddr, "database", c.cfg.Database, "batch_size", c.cfg.BatchSize,
		"batch_bytes", c.cfg.BatchBytes.String(), "flush_interval", c.cfg.FlushInterval, "decode_workers", c.workers)

	// Three stages after fetching: this loop fetches and cuts batches, the
	// decode stage decodes them, the store stage writes and commits them,
	// in order. Decoding batch n+1 overlaps storing batch n. The loop reads
	// the Kafka reader directly (no goroutine and channel per message in
	// between); the reader's own queue buffers while a hand-over waits.
	batches := make(chan pending, 1)
	// Message slices of decoded batches, cleared, for the next batches.
	spare := make(chan []kafka.Message, 2)
	decodedCh := make(chan *decoded, 1)
	// In use at once: up to coalesce being stored, as many being built
	// into the next INSERT, one handed over, one being decoded.
	free := make(chan *decoded, 2*coalesce+2)
	for i := 0; i < cap(free); i++ {
		free <- &decoded{evb: make([]schema.EventBatch, c.workers), dead: make([][]schema.DeadLetter, c.workers)}
	}
	go c.decodeStage(batches, free, decodedCh, spare)
	flushDone := make(chan error, 1)
	go func() { flushDone <- c.storeStage(flushCtx, decodedCh, free) }()

	cur := make([]kafka.Message, 0, c.cfg.BatchSize)
	var curBytes int64
	// The high watermark last seen per partition: the lag gauge is
	// updated when it moves, not for every message.
	hwm := map[int]int64{}
	// bctx ends FlushInterval after the first message of the current
	// batch (the age trigger); it is ctx while the batch is empty.
	bctx, bcancel := ctx, context.CancelFunc(func() {})
	send := func(trigger string) bool {
		bcancel()
		bctx, bcancel = ctx, func() {}
		if len(cur) == 0 {
			return true
		}
		select {
		case batches <- pending{msgs: cur, trigger: trigger, bytes: curBytes}:
			curBytes = 0
			select {
			case cur = <-spare:
			default:
				cur = make([]kafka.Message, 0, c.cfg.BatchSize)
			}
			return true
		case <-ctx.Done():
			return false
		}
	}
	backoff := 100 * time.Millisecond
loop:
	for {
		m, err := c.reader.FetchMessage(bctx)
		if err != nil {
			if ctx.Err() != nil {
				break loop
			}
			if bctx.Err() != nil { // the batch's age
				if !send("age") {
					break loop
				}
				continue
			}
			c.m.Errors.WithLabelValues("fetch").Inc()
			c.log.Warn("kafka fetch failed; retrying", "topic", c.cfg.Topic, "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-bctx.Done():
			}
			backoff = min(backoff*2, c.cfg.RetryMax)
			continue
		}
		backoff = 100 * time.Millisecond
		if h, ok := hwm[m.Partition]; !ok || h != m.HighWaterMark {
			hwm[m.Partition] = m.HighWaterMark
			c.lag.fetched(m.Partition, m.Offset, m.HighWaterMark)
		}
		// Cut the batch before this message would take it over its
		// bytes; then wait until the pipeline has room for it (while
		// waiting, the batch's age still cuts it).
		sz := int64(len(m.Key) + len(m.Value))
		stop := len(cur) > 0 && curBytes+sz > int64(c.cfg.BatchBytes) && !send("bytes")
		for !stop && !c.inflight.acquire(bctx, sz) {
			if ctx.Err() != nil || !send("age") {
				stop = true
			}
		}
		if stop {
			// Shutting down: the message is flushed with the rest.
			c.inflight.force(sz)
			cur = append(cur, m)
			curBytes += sz
			break loop
		}
		if len(cur) == 0 {
			bctx, bcancel = context.WithTimeout(ctx, c.cfg.FlushInterval)
		}
		cur = append(cur, m)
		curBytes += sz
		if len(cur) >= c.cfg.BatchSize && !send("size") {
			break loop
		}
	}
	bcancel()
	if len(cur) > 0 {
		batches <- pending{msgs: cur, trigger: "shutdown", bytes: curBytes}
	}
	close(batches)
	err := <-flushDone
	if err != nil {
		c.log.Error("ingest stopped with unstored messages; they stay uncommitted and are consumed again on the next start", "err", err)
		return err
	}
	c.log.Info("ingest stopped: flushed and committed")
	return nil
}

// decodeStage decodes batches in order into recycled decoded values.
func (c *Consumer) decodeStage(in <-chan pending, free <-chan *decoded, out chan<- *decoded, spare chan<- []kafka.Message) {
	defer close(out)
	for p := range in {
		d := <-free
		d.pending = p
		d.start = time.Now()
		d.valid, d.rejected = c.decode(d, d.start.UnixMilli())
		d.n = len(p.msgs)
		d.last = lastOffsets(d.last[:0], p.msgs)
		// The events own copies of their strings and dead letters keep
		// their payload: the messages are not needed any more.
		clear(p.msgs)
		select {
		case spare <- p.msgs[:0]:
		default:
		}
		d.msgs = nil
		d.decodeTime = time.Since(d.start)
		out <- d
	}
}

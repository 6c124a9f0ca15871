package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// coalesce is how many decoded batches at most one INSERT carries. When
// the store stage falls behind (ClickHouse is the slower side), the
// batches decoded meanwhile go into one INSERT: every INSERT makes a new
// part per month it touches (~60 files), each merged again later; under
// light load each batch is still stored on its own, as soon as it is
// decoded. The INSERTs' own CPU hardly depends on their parts: 100,000
// benchmark events in one INSERT (5 parts) took ClickHouse 18.16 298 ms
// user and 150 ms system CPU, in four INSERTs (20 parts) 288 and 124 ms.
const coalesce = 2

// storeStage stores and commits batches in order, a group of up to
// coalesce batches that are ready at once per INSERT. It runs in two
// steps: one goroutine prepares the next group's INSERT (on a second
// connection: the query sent, the server's answer read) while this one
// sends the previous group block by block, waits for ClickHouse and
// commits, so only sending and committing are serial. After
// a failure (only possible when ctx ends) it stores nothing more and
// commits nothing more, so no later commit can cover an unstored message.
func (c *Consumer) storeStage(ctx context.Context, in <-chan *decoded, free chan<- *decoded) error {
	type built struct {
		group []*decoded
		ins   *writer.PreparedEvents // nil: nothing prepared (no events, or prepare failed)
		// cancel ends the prepared INSERT's context after it was sent or
		// aborted.
		cancel context.CancelFunc
	}
	ready := make(chan built) // unbuffered: at most one built group waits
	stopBuilding := make(chan struct{})
	go func() {
		defer close(ready)
	outer:
		for d := range in {
			group := []*decoded{d}
		more:
			for len(group) < coalesce {
				select {
				case d, ok := <-in:
					if !ok {
						break more
					}
					group = append(group, d)
				default:
					break more
				}
			}
			b := built{group: group, cancel: func() {}}
			select {
			case <-stopBuilding:
			default:
				// A failed prepare is not an error here: store retries the
				// whole INSERT.
				pctx, cancel := context.WithTimeout(ctx, time.Minute)
				ins, err := c.sink.PrepareEvents(pctx, eventBatches(group)...)
				if err != nil || ins == nil {
					if err != nil {
						c.log.Debug("preparing the next INSERT failed; it is retried when stored", "err", err)
					}
					cancel()
				} else {
					b.ins, b.cancel = ins, cancel
				}
			}
			// While the store stage is busy, batches decoded meanwhile
			// join the waiting INSERT, up to coalesce (its rows are sent
			// when it is stored): fewer, larger INSERTs when ClickHouse is
			// the slower side.
			open := true
		handOver:
			for len(b.group) < coalesce && open {
				select {
				case ready <- b:
					continue outer
				case d, ok := <-in:
					if !ok {
						open = false
						break handOver
					}
					b.group = append(b.group, d)
					if b.ins != nil {
						b.ins.Add(eventBatches([]*decoded{d})...)
					}
				}
			}
			ready <- b
			if !open {
				return
			}
		}
	}()
	var failed error
	for b := range ready {
		if failed == nil {
			if err := c.store(ctx, b.group, b.ins); err != nil {
				failed = err
				close(stopBuilding)
			}
		} else {
			b.ins.Abort()
		}
		b.cancel()
		for _, d := range b.group {
			c.inflight.release(d.bytes)
			free <- d
		}
	}
	return failed
}

func eventBatches(group []*decoded) []*schema.EventBatch {
	var bs []*schema.EventBatch
	for _, d := range group {
		for i := range d.evb {
			bs = append(bs, &d.evb[i])
		}
	}
	return bs
}

// store writes the dead letters and then the events of a group of batches,
// then commits the highest offset of every partition in them. ins, when
// not nil, is the group's events INSERT already prepared: the first attempt
// sends it (store sends or aborts it), retries prepare it again.
func (c *Consumer) store(ctx context.Context, group []*decoded, ins *writer.PreparedEvents) error {
	defer func() { ins.Abort() }() // after Send: a no-op
	start := time.Now()
	var n, valid, rejected int
	for _, d := range group {
		c.m.Flushes.WithLabelValues(d.trigger).Inc()
		n += d.n
		valid += d.valid
		rejected += d.rejected
	}

	if rejected > 0 {
		if err := c.deadLetter(ctx, group); err != nil {
			return err
		}
	}
	if valid > 0 {
		bs := eventBatches(group)
		if err := c.retry(ctx, "insert", fmt.Sprintf("insert %d events into ClickHouse %s", valid, c.cfg.ClickHouse.Addr), 0,
			func(ctx context.Context) error {
				t := time.Now()
				var err error
				if ins != nil {
					err = ins.Send()
					ins = nil
				} else {
					err = c.sink.InsertEvents(ctx, bs...)
				}
				if err != nil {
					return c.recreateIfMissing(ctx, err)
				}
				c.m.InsertTime.Observe(time.Since(t).Seconds())
				return nil
			}); err != nil {
			return err
		}
		c.m.Inserted.Add(float64(valid))
	}
	c.m.Consumed.Add(float64(n))
	stored := time.Since(start)

	if err := c.commit(ctx, group, n); err != nil {
		return err
	}
	var decodeTime time.Duration
	for _, d := range group {
		decodeTime += d.decodeTime
	}
	first := group[0]
	c.log.Debug("flushed", "trigger", first.trigger, "batches", len(group), "messages", n, "events", valid, "rejected", rejected,
		"decode_after_cut", decodeTime, "waited", start.Sub(first.cut.Add(first.decodeTime)), "stored", stored, "total", time.Since(start))
	return nil
}

// recreateIfMissing returns err, after recreating the schema when err says
// the database or a table does not exist (someone dropped it while the
// ingester ran): the retry that follows then succeeds, where it would
// otherwise fail for ever. What was dropped is gone; what the ingester
// holds and reads from then on is stored.
func (c *Consumer) recreateIfMissing(ctx context.Context, err error) error {
	if !chconn.MissingSchema(err) {
		return err
	}
	c.log.Warn("ClickHouse database or table is missing; recreating the schema", "database", c.cfg.ClickHouse.Database, "err", err)
	if serr := schema.EnsureLayout(ctx, c.conn, c.cfg.ClickHouse.Database, c.cfg.Layout()); serr != nil {
		return fmt.Errorf("%w; recreating the schema of database %s failed too: %w", err, c.cfg.ClickHouse.Database, serr)
	}
	return err
}

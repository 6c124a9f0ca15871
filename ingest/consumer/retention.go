package consumer

import (
	"context"
	"time"

	"github.com/handoff-dev/handoff/store/schema"
)

// retentionInterval is how often an ingester drops expired partitions
// (also once at start). Partitions are monthly, so daily is soon enough.
const retentionInterval = 24 * time.Hour

// startRetention drops, when RetainMonths is set, the monthly partitions
// older than RetainMonths whole months before the current one, at start and
// then daily, until ctx ends; the returned channel closes when it has
// stopped. Every ingester runs it: dropping is idempotent. A failure is
// logged and tried again the next day; it never stops ingestion.
func (c *Consumer) startRetention(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if c.cfg.RetainMonths <= 0 {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		t := time.NewTicker(retentionInterval)
		defer t.Stop()
		for {
			cutoff := schema.RetentionCutoff(time.Now(), c.cfg.RetainMonths)
			dropped, err := schema.DropPartitionsBefore(ctx, c.conn, c.cfg.ClickHouse.Database, c.cfg.Layout(), cutoff)
			if len(dropped) > 0 {
				c.log.Info("retention: dropped partitions older than the cutoff", "cutoff", cutoff.Format(time.DateOnly), "partitions", dropped)
			}
			if err != nil && ctx.Err() == nil {
				c.log.Error("retention: old partitions not dropped; trying again in a day", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return done
}

package consumer

import (
	"context"
	"fmt"
	"time"
)

// retry runs fn until it succeeds, ctx is done, or (when attempts > 0)
// after that many attempts, waiting with capped exponential backoff in
// between. Each attempt gets at most a minute.
func (c *Consumer) retry(ctx context.Context, stage, what string, attempts int, fn func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		err := fn(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				c.log.Info("recovered", "stage", stage, "what", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: stopped before it succeeded: %w", what, err)
		}
		if stage != "startup" {
			c.m.Errors.WithLabelValues(stage).Inc()
		}
		if attempts > 0 && attempt >= attempts {
			return fmt.Errorf("%s: failed %d times: %w", what, attempt, err)
		}
		c.log.Warn("failed; retrying", "stage", stage, "what", what, "attempt", attempt, "err", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("%s: stopped before it succeeded: %w", what, err)
		}
		backoff = min(backoff*2, c.cfg.RetryMax)
	}
}

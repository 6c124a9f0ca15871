package consumer

import (
	"context"

	"github.com/handoff-dev/handoff/internal/retry"
)

// retry runs fn until it succeeds, ctx is done, or (when attempts > 0)
// after that many attempts (retry.Retrier, with the consumer's log,
// error counter and backoff cap).
func (c *Consumer) retry(ctx context.Context, stage, what string, attempts int, fn func(context.Context) error) error {
	return retry.Retrier{Log: c.log, Errors: c.m.Errors, Max: c.cfg.RetryMax}.Do(ctx, stage, what, attempts, fn)
}

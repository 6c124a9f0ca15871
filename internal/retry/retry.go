// Package retry is how handoff's consumers wait out an unreachable
// ClickHouse or Kafka: the same attempt again, with capped exponential
// backoff, each failure logged and counted by stage, until it succeeds or
// the context ends. Holding the work (instead of dropping it) is what makes
// an outage stall ingestion without losing anything.
package retry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Startup is the stage of attempts made before a consumer runs; they are
// logged but not counted (the metrics describe a running consumer).
const Startup = "startup"

// Retrier retries attempts. The zero value logs nothing, counts nothing and
// backs off up to 10 s.
type Retrier struct {
	Log    *slog.Logger           // nil: no logging
	Errors *prometheus.CounterVec // failed attempts by stage label; nil: not counted
	Max    time.Duration          // cap of the backoff (from 100 ms); default 10 s
	// Attempt bounds one attempt (default 1 minute). Work that grows with
	// the data, like reading a detector's history back, needs more: with
	// a bound it cannot meet, every attempt fails and it never succeeds.
	Attempt time.Duration
}

// Do runs fn until it succeeds, ctx is done, or (when attempts > 0) after
// that many attempts, waiting with capped exponential backoff in between.
// Each attempt gets at most Attempt (a minute by default). stage labels the error counter; what
// says in words what is attempted, for the log and the error.
func (r Retrier) Do(ctx context.Context, stage, what string, attempts int, fn func(context.Context) error) error {
	limit := r.Max
	if limit <= 0 {
		limit = 10 * time.Second
	}
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	attemptLimit := r.Attempt
	if attemptLimit <= 0 {
		attemptLimit = time.Minute
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptLimit)
		err := fn(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("recovered", "stage", stage, "what", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: stopped before it succeeded: %w", what, err)
		}
		if stage != Startup && r.Errors != nil {
			r.Errors.WithLabelValues(stage).Inc()
		}
		if attempts > 0 && attempt >= attempts {
			return fmt.Errorf("%s: failed %d times: %w", what, attempt, err)
		}
		log.Warn("failed; retrying", "stage", stage, "what", what, "attempt", attempt, "err", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("%s: stopped before it succeeded: %w", what, err)
		}
		backoff = min(backoff*2, limit)
	}
}

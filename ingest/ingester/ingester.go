// Package ingester runs handoff ingest: the events consumer
// (ingest/consumer) and the results consumer (ingest/results, findings
// and diagnoses) side by side over one configuration, until either stops.
package ingester

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/ingest/results"
	"github.com/handoff-dev/handoff/store/chconn"
)

// Share copies into rcfg what the results consumer shares with the events
// consumer (Kafka, database, dead-letter topic, timing), so that one set
// of flags configures both, then validates it.
func Share(cfg consumer.Config, rcfg *results.Config) error {
	rcfg.Brokers, rcfg.DLQTopic, rcfg.Database = cfg.Kafka.Brokers, cfg.DLQTopic, cfg.ClickHouse.Database
	rcfg.Partitions, rcfg.ReplicationFactor = cfg.Kafka.Partitions, cfg.Kafka.Replication
	rcfg.RetryMax, rcfg.SessionTimeout, rcfg.ShutdownTimeout = cfg.RetryMax, cfg.SessionTimeout, cfg.ShutdownTimeout
	return rcfg.Validate()
}

// Options are what the process gives both consumers.
type Options struct {
	Logger   *slog.Logger
	Registry *prometheus.Registry
}

// Run starts both consumers and runs them until ctx is done or one of
// them fails (which stops the other), then closes them. It returns nil
// when ctx ended it, also while still waiting for the services on start.
func Run(ctx context.Context, cfg consumer.Config, rcfg results.Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := consumer.New(ctx, cfg, consumer.Options{Logger: log, Registry: opts.Registry})
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while waiting for the services
		}
		return fmt.Errorf("start: %w", err)
	}
	chcfg := cfg.ClickHouse.Config()
	chcfg.Compression, chcfg.Settings = cfg.Compression, cfg.Layout().InsertSettings()
	conn, err := chconn.Open(ctx, chcfg)
	if err != nil {
		c.Close()
		return fmt.Errorf("results: %w", err)
	}
	defer conn.Close()
	rc, err := results.New(ctx, rcfg, results.Options{Conn: conn, Logger: log.With("consumer", "results"), Registry: opts.Registry})
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start the results consumer: %w", err)
	}
	// Either consumer stopping (a fatal error) stops the other.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	resultsDone := make(chan error, 1)
	go func() { resultsDone <- rc.Run(rctx); stop() }()
	eventsErr := c.Run(rctx)
	stop()
	runErr := errors.Join(eventsErr, <-resultsDone)
	closeErr := errors.Join(c.Close(), rc.Close())
	if runErr != nil {
		return runErr
	}
	if closeErr != nil {
		log.Warn("close", "err", closeErr)
	}
	return nil
}

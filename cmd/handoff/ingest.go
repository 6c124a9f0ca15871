package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/ingest/results"
	"github.com/handoff-dev/handoff/store/chconn"
)

// runIngest is `handoff ingest`: consume delivery events from Kafka into
// ClickHouse until ctx is done (SIGINT/SIGTERM), then flush, commit and
// return. Configuration: HANDOFF_* variables, overridden by flags
// (docs/ingest.md).
func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := consumer.LoadConfig()
	if err != nil {
		return usageError("%v", err)
	}
	rcfg, err := results.LoadConfig()
	if err != nil {
		return usageError("%v", err)
	}
	d, err := startDaemon(daemonSpec{
		name: "ingest",
		about: "Consume delivery events from Kafka into ClickHouse; rejected messages go to the dead-letter topic.\n" +
			"Findings (handoff detect) and diagnoses (handoff backfill) are stored from their topics too.",
		register: func(fs *flag.FlagSet) {
			cfg.RegisterFlags(fs)
			rcfg.RegisterFlags(fs)
		},
		validate: func() error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			// The results consumer shares the events consumer's Kafka,
			// database, dead-letter topic and timing settings.
			rcfg.Brokers, rcfg.DLQTopic, rcfg.Database = cfg.Brokers, cfg.DLQTopic, cfg.Database
			rcfg.Partitions, rcfg.ReplicationFactor = cfg.Partitions, cfg.ReplicationFactor
			rcfg.RetryMax, rcfg.SessionTimeout, rcfg.ShutdownTimeout = cfg.RetryMax, cfg.SessionTimeout, cfg.ShutdownTimeout
			return rcfg.Validate()
		},
		metricsAddr: func() string { return cfg.MetricsAddr },
	}, args, stderr)
	if err != nil {
		return err
	}
	defer d.stop()
	log, reg := d.log, d.reg

	c, err := consumer.New(ctx, cfg, consumer.Options{Logger: log, Registry: reg})
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while waiting for the services
		}
		return fmt.Errorf("ingest: start: %w", err)
	}
	conn, err := chconn.Open(ctx, chconn.Config{Addr: cfg.ClickHouseAddr, User: cfg.User, Password: cfg.Password, Compression: cfg.Compression, Settings: cfg.Layout().InsertSettings()})
	if err != nil {
		c.Close()
		return fmt.Errorf("ingest: results: %w", err)
	}
	defer conn.Close()
	rc, err := results.New(ctx, rcfg, results.Options{Conn: conn, Logger: log.With("consumer", "results"), Registry: reg})
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("ingest: start the results consumer: %w", err)
	}
	defer gcDefaults(ingestGCPercent, ingestMemoryLimit(int64(cfg.BatchBytes)))()
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
		return fmt.Errorf("ingest: %w", runErr)
	}
	if closeErr != nil {
		log.Warn("close", "err", closeErr)
	}
	return nil
}

func ingestLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// serveMetrics serves /metrics and /healthz on addr (nothing when addr is
// empty) until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w (set the metrics address flag to a free address, or empty to disable)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}, nil
}

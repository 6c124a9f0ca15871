package main

import (
	"context"
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
	"github.com/handoff-dev/handoff/ingest/ingester"
	"github.com/handoff-dev/handoff/ingest/results"
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
			return ingester.Share(cfg, &rcfg)
		},
		metricsAddr: func() string { return cfg.MetricsAddr },
	}, args, stderr)
	if err != nil {
		return err
	}
	defer d.stop()
	defer gcDefaults(ctx, ingestGCPercent, ingestMemoryLimit(int64(cfg.BatchBytes)))()
	return ingester.Run(ctx, cfg, rcfg, ingester.Options{Logger: d.log, Registry: d.reg})
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

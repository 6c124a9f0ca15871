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
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/handoff-dev/handoff/ingest/notify"
)

// runNotify is `handoff notify`: deliver findings from the findings topic
// to Alertmanager and webhooks until ctx is done (docs/alerting.md).
func runNotify(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	cfg, err := notify.LoadConfig()
	if err != nil {
		return usageError("%v", err)
	}
	fs := flag.NewFlagSet("handoff notify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	logLevel := fs.String("log-level", envOr("HANDOFF_LOG_LEVEL", "info"), "log level: debug, info, warn, error (HANDOFF_LOG_LEVEL)")
	logFormat := fs.String("log-format", envOr("HANDOFF_LOG_FORMAT", "text"), "log format: text or json (HANDOFF_LOG_FORMAT)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff notify [flags]")
		fmt.Fprintln(stderr, "\nDeliver findings (the findings topic) as alerts to Alertmanager and as signed JSON to webhooks.")
		fmt.Fprintln(stderr, "Every flag has a HANDOFF_* variable (named in its help); flags win.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	log, err := ingestLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return usageError("%v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stop, err := serveMetrics(cfg.MetricsAddr, reg, log, "HANDOFF_NOTIFY_METRICS_ADDR")
	if err != nil {
		return err
	}
	defer stop()

	n, err := notify.New(ctx, cfg, notify.Options{Logger: log, Registry: reg})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("notify: start: %w", err)
	}
	runErr := n.Run(ctx)
	if err := n.Close(); err != nil {
		log.Warn("close", "err", err)
	}
	if runErr != nil {
		return fmt.Errorf("notify: %w", runErr)
	}
	return nil
}

// serveMetrics serves /metrics of reg and /healthz on addr (nothing when
// addr is empty) until the returned stop is called; envName is the
// variable that sets addr, named in the error.
func serveMetrics(addr string, reg *prometheus.Registry, log *slog.Logger, envName string) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w (set %s or --metrics-addr to a free address, or empty to disable)", addr, err, envName)
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

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/handoff-dev/handoff/ingest/detection"
)

// runDetect is `handoff detect`: the streaming detector over the events
// topic, publishing findings until ctx is done (docs/detect.md).
func runDetect(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	cfg, err := detection.LoadConfig(nil)
	if err != nil {
		return usageError("%v", err)
	}
	fs := flag.NewFlagSet("handoff detect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	logLevel := fs.String("log-level", envOr("HANDOFF_LOG_LEVEL", "info"), "log level: debug, info, warn, error (HANDOFF_LOG_LEVEL)")
	logFormat := fs.String("log-format", envOr("HANDOFF_LOG_FORMAT", "text"), "log format: text or json (HANDOFF_LOG_FORMAT)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff detect [flags]")
		fmt.Fprintln(stderr, "\nWatch the events topic, fire the contracts' deadlines and publish findings (open, resolved)")
		fmt.Fprintln(stderr, "to the findings topic; handoff ingest stores them. Run several with the same --group to split the work.")
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
	contracts, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stopMetrics, err := serveMetrics(cfg.MetricsAddr, reg, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	clock, err := cfg.Clock(time.Now)
	if err != nil {
		return usageError("%v", err)
	}
	if cfg.Now != "" {
		log.Warn("detect: the clock starts at --now, not at the wall clock: for demos and tests only", "now", cfg.Now)
	}
	if err := detection.Run(ctx, cfg, detection.RunOptions{Contracts: contracts, Logger: log, Registry: reg, Now: clock}); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("detect: %w", err)
	}
	return nil
}

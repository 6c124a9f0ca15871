package main

import (
	"context"
	"io"
	"time"

	"github.com/handoff-dev/handoff/judge/live"
)

// runDetect is `handoff detect`: the streaming detector over the events
// topic, publishing findings until ctx is done (docs/detect.md).
func runDetect(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	cfg, err := live.LoadConfig(nil)
	if err != nil {
		return usageError("%v", err)
	}
	d, err := startDaemon(daemonSpec{
		name: "detect",
		about: "Watch the events topic, fire the contracts' deadlines and publish findings (open, resolved)\n" +
			"to the findings topic; handoff ingest stores them. Run several with the same --group to split the work.",
		register:    cfg.RegisterFlags,
		validate:    cfg.Validate,
		metricsAddr: func() string { return cfg.MetricsAddr },
	}, args, stderr)
	if err != nil {
		return err
	}
	defer d.stop()
	defer gcDefaults(ctx, detectGCPercent, softMemoryLimit)()
	log, reg := d.log, d.reg
	contracts, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	clock, err := cfg.Clock(time.Now)
	if err != nil {
		return usageError("%v", err)
	}
	if cfg.Now != "" {
		log.Warn("the clock starts at --now, not at the wall clock: for demos and tests only", "now", cfg.Now)
	}
	if err := live.Run(ctx, cfg, live.RunOptions{Contracts: contracts, Logger: log, Registry: reg, Now: clock}); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return nil
}

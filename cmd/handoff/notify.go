package main

import (
	"context"
	"fmt"
	"io"

	"github.com/handoff-dev/handoff/notify"
)

// runNotify is `handoff notify`: deliver findings from the findings topic
// to Alertmanager and webhooks until ctx is done (docs/alerting.md).
func runNotify(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	cfg, err := notify.LoadConfig()
	if err != nil {
		return usageError("%v", err)
	}
	d, err := startDaemon(daemonSpec{
		name:        "notify",
		about:       "Deliver findings (the findings topic) as alerts to Alertmanager and as signed JSON to webhooks.",
		register:    cfg.RegisterFlags,
		validate:    cfg.Validate,
		metricsAddr: func() string { return cfg.MetricsAddr },
	}, args, stderr)
	if err != nil {
		return err
	}
	defer d.stop()
	log := d.log

	n, err := notify.New(ctx, cfg, notify.Options{Logger: log, Registry: d.reg})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start: %w", err)
	}
	runErr := n.Run(ctx)
	if err := n.Close(); err != nil {
		log.Warn("close", "err", err)
	}
	if runErr != nil {
		return runErr
	}
	return nil
}

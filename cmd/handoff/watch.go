package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/ingest/watch"
)

// watchFlags defines watch's flags on fs over c.
func watchFlags(fs *flag.FlagSet, c *watch.Command) {
	fs.StringVar(&c.Role, "role", "", "producer, exchange or receiver: which side of the chain the directory is (required)")
	fs.StringVar(&c.Dir, "dir", "", "the directory tree to watch (required)")
	fs.StringVar(&c.ContractsPath, "contract", envOr("HANDOFF_CONTRACTS", ""), "delivery contract file, or a directory of them, whose templates name the files (required; env HANDOFF_CONTRACTS)")
	fs.DurationVar(&c.Settle, "settle", 2*time.Second, "a file is final once its size and modification time held this long")
	fs.DurationVar(&c.Rescan, "rescan", 30*time.Second, "interval of the full rescan that catches missed notifications")
	fs.StringVar(&c.Component, "component", c.Component, "component named in the events (env HANDOFF_COMPONENT); default handoff-watch")
	fs.StringVar(&c.Ledger, "ledger", "", "file recording the ids of acknowledged events, so a restart sends none again")
	fs.BoolVar(&c.Once, "once", false, "scan once, report every file once it settled, and exit")
	c.Kafka.RegisterFlags(fs)
	c.Kafka.RegisterTopicFlag(fs)
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "how long Kafka may take to acknowledge (env HANDOFF_EMIT_TIMEOUT)")
	fs.StringVar(&c.RestoredEvents, "restored-events", "", "events file restore-signal --events records to: a signal marked as restored is not reported only when its signal.restored is there")
	fs.BoolVar(&c.RestoredClickHouse, "restored-clickhouse", false, "look a marked signal's signal.restored up in the stored history (--clickhouse-*) instead")
	c.ClickHouse.RegisterFlags(fs)
	fs.StringVar(&c.LogLevel, "log-level", envOr("HANDOFF_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env HANDOFF_LOG_LEVEL)")
}

// runWatch is `handoff watch`: turn files arriving in a directory tree
// into boundary events on Kafka.
func runWatch(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	var ev emitEnv
	if err := env.Parse(&ev); err != nil {
		return usageError("environment: %v", err)
	}
	c := watch.Command{Kafka: ev.Kafka, Timeout: ev.Timeout, Component: ev.Component}
	fs := flag.NewFlagSet("handoff watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	watchFlags(fs, &c)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff watch --role producer|exchange|receiver --dir DIR --contract FILE|DIR [flags]")
		fmt.Fprintln(stderr, "\nWatches a directory tree and emits the boundary events its files prove: artifact.staged,")
		fmt.Fprintln(stderr, "artifact.finalized (rows, bytes, sha256), signal.published at a producer; artifact.transferred and")
		fmt.Fprintln(stderr, "signal.transferred at an exchange or receiver. Files matching no contract are ignored and counted.")
		fmt.Fprintln(stderr, "Exit status: 0 stopped (SIGTERM) or --once done, 2 bad usage, 3 failure. See docs/watch.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.Prepare(); err != nil {
		return err
	}
	set, err := loadContracts(c.ContractsPath)
	if err != nil {
		return err
	}
	c.Contracts = set
	return c.Run(ctx, stderr)
}

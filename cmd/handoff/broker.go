package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/internal/broker"
)

// runBroker runs the embedded Kafka-protocol broker until interrupted.
func runBroker(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var cfg broker.Config
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	fs := flag.NewFlagSet("handoff broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff broker [flags]")
		fmt.Fprintln(stderr, "\nRun the embedded Kafka-protocol broker (make demo's default) until interrupted;")
		fmt.Fprintln(stderr, "prints HANDOFF_KAFKA_BROKERS=ADDR on standard output once it listens.\n\nFlags:")
		fs.PrintDefaults()
	}
	fs.IntVar(&cfg.Port, "port", cfg.Port, "port on 127.0.0.1 (env HANDOFF_BROKER_PORT)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory that persists topics and offsets (env HANDOFF_BROKER_DATA_DIR; empty: in memory)")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of auto-created topics (env HANDOFF_BROKER_PARTITIONS)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	b, err := broker.Start(cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	addrs := strings.Join(b.Addrs(), ",")
	fmt.Fprintf(stdout, "HANDOFF_KAFKA_BROKERS=%s\n", addrs)
	slog.New(slog.NewTextHandler(stderr, nil)).Info("embedded broker running", "addrs", addrs, "data_dir", cfg.DataDir)
	<-ctx.Done()
	return nil
}

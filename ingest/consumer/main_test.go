package consumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/handoff-dev/handoff/ingest/consumer"
)

// childEnv makes the test binary run as an ingester process (for the
// crash test) instead of running tests: configuration from HANDOFF_*.
const childEnv = "HANDOFF_TEST_INGEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

func runChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := consumer.LoadConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := consumer.New(ctx, cfg, consumer.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	err = c.Run(ctx)
	c.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

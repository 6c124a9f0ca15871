package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/ingest/watch"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// runWatch is `handoff watch`: turn files arriving in a directory tree
// into boundary events on Kafka.
func runWatch(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	var ev emitEnv
	if err := env.Parse(&ev); err != nil {
		return usageError("environment: %v", err)
	}
	fs := flag.NewFlagSet("handoff watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "", "producer, exchange or receiver: which side of the chain the directory is (required)")
	dir := fs.String("dir", "", "the directory tree to watch (required)")
	contracts := fs.String("contract", envOr("HANDOFF_CONTRACTS", ""), "delivery contract file, or a directory of them, whose templates name the files (required; env HANDOFF_CONTRACTS)")
	settle := fs.Duration("settle", 2*time.Second, "a file is final once its size and modification time held this long")
	rescan := fs.Duration("rescan", 30*time.Second, "interval of the full rescan that catches missed notifications")
	component := fs.String("component", ev.Component, "component named in the events (env HANDOFF_COMPONENT); default handoff-watch")
	ledger := fs.String("ledger", "", "file recording the ids of acknowledged events, so a restart sends none again")
	restores := restoreFlags(fs)
	once := fs.Bool("once", false, "scan once, report every file once it settled, and exit")
	brokers := fs.String("kafka-brokers", strings.Join(ev.Brokers, ","), "Kafka brokers, host:port[,...] (required; env HANDOFF_KAFKA_BROKERS)")
	topic := fs.String("topic", ev.Topic, "events topic (env HANDOFF_TOPIC)")
	timeout := fs.Duration("timeout", ev.Timeout, "how long Kafka may take to acknowledge (env HANDOFF_EMIT_TIMEOUT)")
	logLevel := fs.String("log-level", envOr("HANDOFF_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env HANDOFF_LOG_LEVEL)")
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
	r, err := watch.ParseRole(*role)
	if err != nil {
		return usageError("--role: %v", err)
	}
	if *dir == "" {
		return usageError("--dir is required")
	}
	if *contracts == "" {
		return usageError("--contract is required: file names are matched through the contracts' templates")
	}
	if *brokers == "" {
		return usageError("--kafka-brokers is required (or HANDOFF_KAFKA_BROKERS): the watcher emits to Kafka")
	}
	if *settle <= 0 || *rescan <= 0 {
		return usageError("--settle and --rescan must be positive")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	set, err := loadContracts(*contracts)
	if err != nil {
		return err
	}
	em, err := emit.New(emit.Config{Brokers: strings.Split(*brokers, ","), Topic: *topic, Timeout: *timeout, CreateTopic: true, Partitions: ev.Partitions})
	if err != nil {
		return usageError("%v", err)
	}
	defer em.Close()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	wcfg := watch.Config{Role: r, Dir: *dir, Contracts: set, Settle: *settle, Rescan: *rescan,
		Component: *component, Ledger: *ledger, Log: log}
	if wcfg.Restores, err = restores(ctx); err != nil {
		return err
	}
	w, err := watch.New(wcfg, em)
	if err != nil {
		return usageError("%v", err)
	}
	if *once {
		err = w.Once(ctx)
	} else {
		err = w.Run(ctx)
	}
	st := w.Stats()
	log.Info("watch: stopped", "emitted", st.Emitted, "ignored_files", st.Ignored, "skipped_from_ledger", st.Skipped, "anomalies", st.Anomalies, "unreadable", st.Unreadable, "restored_signals", st.Restored)
	return err
}

// restoreFlags defines watch's flags of where restores are looked up (an
// events file, the stored history, or nowhere: no mark is trusted) and
// returns what opens it once the flags are parsed.
func restoreFlags(fs *flag.FlagSet) func(context.Context) (watch.Restores, error) {
	file := fs.String("restored-events", "", "events file restore-signal --events records to: a signal marked as restored is not reported only when its signal.restored is there")
	fromCH := fs.Bool("restored-clickhouse", false, "look a marked signal's signal.restored up in the stored history (--clickhouse-*) instead")
	var ch clickhouseConfig
	envErr := env.Parse(&ch)
	ch.register(fs)
	return func(ctx context.Context) (watch.Restores, error) {
		if envErr != nil {
			return nil, usageError("environment: %v", envErr)
		}
		return watchRestores(ctx, *file, *fromCH, &ch)
	}
}

func watchRestores(ctx context.Context, file string, fromCH bool, ch *clickhouseConfig) (watch.Restores, error) {
	switch {
	case file != "" && fromCH:
		return nil, usageError("--restored-events and --restored-clickhouse: give one")
	case file != "":
		return watch.EventsFile(file), nil
	case !fromCH:
		return nil, nil
	}
	if err := ch.check(); err != nil {
		return nil, err
	}
	conn, err := ch.open(ctx)
	if err != nil {
		return nil, err
	}
	st, err := history.New(conn, ch.Database)
	if err != nil {
		return nil, usageError("--clickhouse-database: %v", err)
	}
	return historyRestores{st}, nil
}

// historyRestores finds signal.restored events in the stored history.
type historyRestores struct{ h *history.Store }

func (r historyRestores) Restored(ctx context.Context, key model.BatchKey, id string) (model.Event, bool, error) {
	var found model.Event
	ok := false
	err := r.h.BatchEvents(ctx, key, func(e *model.Event) error {
		if e.ID == id && e.Type == model.SignalRestored {
			found, ok = *e, true
		}
		return nil
	})
	return found, ok, err
}

package watch

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/store/chconfig"
	"github.com/handoff-dev/handoff/store/history"
)

// Command is one run of `handoff watch` as its flags give it, checked by
// Prepare before anything starts.
type Command struct {
	Role, Dir string
	// ContractsPath is --contract as given; Contracts the set loaded from
	// it (by the caller, after Prepare).
	ContractsPath string
	Contracts     Contracts
	Settle        time.Duration
	Rescan        time.Duration
	Component     string
	Ledger        string
	Once          bool
	Kafka         cliflag.Kafka
	Timeout       time.Duration
	LogLevel      string
	// RestoredEvents or RestoredClickHouse say where a signal's
	// restore mark is checked against its recorded signal.restored (the
	// events file restore-signal appends to, or the stored history in
	// ClickHouse); neither: no mark is trusted.
	RestoredEvents     string
	RestoredClickHouse bool
	ClickHouse         chconfig.Service

	role  Role
	level slog.Level
}

// Prepare checks every value, naming the flag of what is wrong (a usage
// error, exit 2).
func (c *Command) Prepare() error {
	r, err := ParseRole(c.Role)
	if err != nil {
		return exitcode.Usagef("--role: %v", err)
	}
	c.role = r
	if c.Dir == "" {
		return exitcode.Usagef("--dir is required")
	}
	if c.ContractsPath == "" {
		return exitcode.Usagef("--contract is required: file names are matched through the contracts' templates")
	}
	if err := c.Kafka.Check(true); err != nil {
		return exitcode.Usagef("%v: the watcher emits to Kafka", err)
	}
	if c.Settle <= 0 || c.Rescan <= 0 {
		return exitcode.Usagef("--settle and --rescan must be positive")
	}
	if c.RestoredEvents != "" && c.RestoredClickHouse {
		return exitcode.Usagef("--restored-events and --restored-clickhouse: give one")
	}
	if c.RestoredClickHouse {
		if err := c.ClickHouse.Check(); err != nil {
			return exitcode.Usagef("%v", err)
		}
	}
	if err := c.level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return exitcode.Usagef("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	return nil
}

// Run watches until ctx is done (or, with Once, scans once and waits for
// every file to settle), logging on stderr, and logs what it did.
func (c *Command) Run(ctx context.Context, stderr io.Writer) error {
	em, err := emit.New(emit.Config{Brokers: c.Kafka.Brokers, Topic: c.Kafka.Topic, Timeout: c.Timeout, CreateTopic: true,
		Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.Replication})
	if err != nil {
		return exitcode.Usagef("%v", err)
	}
	defer em.Close()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: c.level}))
	cfg := Config{Role: c.role, Dir: c.Dir, Contracts: c.Contracts, Settle: c.Settle, Rescan: c.Rescan,
		Component: c.Component, Ledger: c.Ledger, Log: log}
	switch {
	case c.RestoredEvents != "":
		cfg.Restores = EventsFile(c.RestoredEvents)
	case c.RestoredClickHouse:
		conn, err := c.ClickHouse.Open(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		st, err := history.New(conn, c.ClickHouse.Database)
		if err != nil {
			return exitcode.Usagef("--clickhouse-database: %v", err)
		}
		cfg.Restores = StoredRestores(st)
	}
	w, err := New(cfg, em)
	if err != nil {
		return exitcode.Usagef("%v", err)
	}
	if c.Once {
		err = w.Once(ctx)
	} else {
		err = w.Run(ctx)
	}
	st := w.Stats()
	log.Info("watch: stopped", "emitted", st.Emitted, "ignored_files", st.Ignored, "skipped_from_ledger", st.Skipped, "anomalies", st.Anomalies, "unreadable", st.Unreadable, "restored_signals", st.Restored)
	return err
}

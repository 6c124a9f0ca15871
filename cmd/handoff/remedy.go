package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/ingest/restore"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/judge/diagnose"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// remedyConfig is what restore-signal and verify read: which batch, where
// its files are, where its events come from (as diagnose reads them), and
// each command's own flags.
type remedyConfig struct {
	Events    string `env:"HANDOFF_EVENTS"`
	Contracts string `env:"HANDOFF_CONTRACTS"`
	Kafka     emitEnv
	CH        chconfig.Service
	// ClickHouse is the address events are read from: set, like
	// diagnose's, only when --clickhouse-addr is given on the command line.
	ClickHouse string
	Batch      string
	Dir        string
	AsOf       string
	Format     string
	Settle     time.Duration
	// restore-signal
	Apply   bool
	Reason  string
	Brokers string
	// verify
	Wait, Poll time.Duration

	key  model.BatchKey
	asOf time.Time // zero: now, read at each evaluation
}

// remedyFlags declares the flags of restore-signal (restore true) or
// verify on fs: every flag of the two commands is defined here.
func remedyFlags(fs *flag.FlagSet, cfg *remedyConfig, restore bool, stderr io.Writer) {
	fs.StringVar(&cfg.Batch, "batch", "", "the batch, pipeline/business_date/batch_id (required)")
	fs.StringVar(&cfg.Dir, "dir", "", "the receiver directory holding the batch's data file and signal (required)")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file, or a directory of them (required; env HANDOFF_CONTRACTS)")
	fs.StringVar(&cfg.Events, "events", cfg.Events, "JSON-lines file of delivery events (env HANDOFF_EVENTS)")
	cfg.CH.RegisterFlags(fs, chconfig.WithLegacySpellings(stderr))
	fs.StringVar(&cfg.AsOf, "as-of", "", "evaluate as of this RFC 3339 time; default: now")
	fs.StringVar(&cfg.Format, "format", "text", "output format, text or json")
	if !restore {
		fs.DurationVar(&cfg.Wait, "wait", 0, "wait up to this long for the consumer to consume the batch, re-reading the events (0: check once)")
		fs.DurationVar(&cfg.Poll, "poll", 2*time.Second, "with --wait: how often to re-read the events")
		return
	}
	fs.DurationVar(&cfg.Settle, "settle", 2*time.Second, "the data file must keep its size and modification time this long to count as final (0: do not wait)")
	fs.BoolVar(&cfg.Apply, "apply", false, "write the signal when every precondition is proven (default: dry run)")
	fs.StringVar(&cfg.Reason, "reason", "", "why the signal is restored, recorded in signal.restored (required with --apply)")
	fs.StringVar(&cfg.Brokers, "kafka-brokers", strings.Join(cfg.Kafka.Brokers, ","), "record signal.restored on Kafka at host:port[,...] (env HANDOFF_KAFKA_BROKERS); without it, --apply appends the event to the --events file")
	fs.StringVar(&cfg.Kafka.Topic, "topic", cfg.Kafka.Topic, "events topic (env HANDOFF_TOPIC)")
	fs.DurationVar(&cfg.Kafka.Timeout, "timeout", cfg.Kafka.Timeout, "how long Kafka may take to answer and to acknowledge signal.restored (env HANDOFF_EMIT_TIMEOUT)")
}

// check validates the flags before anything is read.
func (cfg *remedyConfig) check(fs *flag.FlagSet) error {
	if cliflag.Given(fs, "clickhouse-addr", "clickhouse") {
		if err := cfg.CH.Check(); err != nil {
			return usageError("%v", err)
		}
		cfg.ClickHouse = cfg.CH.Addr
	}
	if cfg.Batch == "" {
		return usageError("--batch pipeline/business_date/batch_id is required")
	}
	k, err := model.ParseBatchKey(cfg.Batch)
	if err != nil {
		return usageError("--batch: %v", err)
	}
	cfg.key = k
	if cfg.Dir == "" {
		return usageError("--dir is required: the receiver directory of the batch's files")
	}
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return usageError("--dir %s: not a directory (%v)", cfg.Dir, err)
	}
	if cfg.Contracts == "" {
		return usageError("--contract is required: the names of the data file and the signal derive from the contract's templates")
	}
	if cfg.Format != "text" && cfg.Format != "json" {
		return usageError("--format %q: want text or json", cfg.Format)
	}
	if cfg.Events == "-" {
		return usageError("--events -: read events from a file (the source is read again by --wait and appended to by --apply)")
	}
	if cfg.Settle < 0 || cfg.Wait < 0 || cfg.Poll < 0 {
		return usageError("--settle and --wait must not be negative, --poll must be positive")
	}
	if cfg.AsOf != "" {
		t, err := cliflag.ParseTime("as-of", cfg.AsOf)
		if err != nil {
			return usageError("%v", err)
		}
		cfg.asOf = t
	}
	if cfg.Apply && strings.TrimSpace(cfg.Reason) == "" {
		return usageError("--apply needs --reason TEXT: signal.restored records why the signal was restored")
	}
	return nil
}

// parseRemedyEnv reads the environment into a config.
func parseRemedyEnv() (remedyConfig, error) {
	var cfg remedyConfig
	if err := env.Parse(&cfg); err != nil {
		return cfg, usageError("environment: %v", err)
	}
	return cfg, nil
}

// batchHistory is where restore-signal and verify read the batch's
// history: cfg's events file, or ClickHouse when --clickhouse-addr is
// given (diagnose.BatchHistory).
func (cfg *remedyConfig) batchHistory(set *contract.Set, stderr io.Writer) diagnose.BatchHistory {
	src := diagnose.SourceConfig{Events: cfg.Events}
	if cfg.ClickHouse != "" {
		src.ClickHouse = &chconfig.Service{Addr: cfg.ClickHouse, Database: cfg.CH.Database, User: cfg.CH.User, Password: cfg.CH.Password}
	}
	return diagnose.BatchHistory{Source: src, Contracts: set, Messages: stderr}
}

// printResults prints preconditions or checks, one per line with its
// evidence.
func printResults(w io.Writer, title string, rs []remedy.Result, yes, no string) {
	fmt.Fprintln(w, title)
	width := 0
	for _, r := range rs {
		width = max(width, len(r.Name))
	}
	for _, r := range rs {
		mark := "[" + yes + "]"
		if !r.Proven {
			mark = "[" + no + "]"
		}
		fmt.Fprintf(w, "  %-12s %-*s  %s\n", mark, width, r.Name, r.Detail)
		if len(r.Evidence) > 0 {
			fmt.Fprintf(w, "  %-12s %-*s  evidence: %s\n", "", width, "", strings.Join(r.Evidence, ", "))
		}
	}
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// sourceArgs are the flags that name cfg's source of events, for a printed
// command that must read the same.
func (cfg *remedyConfig) sourceArgs() []string {
	args := []string{"--batch", cfg.Batch, "--dir", cfg.Dir, "--contract", cfg.Contracts}
	if cfg.ClickHouse != "" {
		args = append(args, "--clickhouse-addr", cfg.ClickHouse, "--clickhouse-database", cfg.CH.Database)
	} else {
		args = append(args, "--events", cfg.Events)
	}
	return args
}

// shellCommand joins args into a command a POSIX shell runs as printed.
func shellCommand(args ...string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var _ restore.History = diagnose.BatchHistory{}

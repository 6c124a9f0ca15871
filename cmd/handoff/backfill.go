package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/progress"
	"github.com/handoff-dev/handoff/judge/backfill"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// backfillConfig is backfill's configuration: environment first, flags win.
type backfillConfig struct {
	ClickHouse chconfig.Service
	Kafka      cliflag.Kafka
	Topic      string `env:"HANDOFF_DIAGNOSES_TOPIC" envDefault:"handoff.diagnoses"`
	Contracts  string `env:"HANDOFF_CONTRACTS"`
	AsOf       string `env:"HANDOFF_AS_OF"`
	Format     string `env:"HANDOFF_FORMAT"`
	Workers    int    `env:"HANDOFF_BACKFILL_WORKERS"`
	UnitRows   int    `env:"HANDOFF_BACKFILL_UNIT_ROWS"`
	ReadAhead  bool   `env:"HANDOFF_BACKFILL_READ_AHEAD"`
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// Backfill's garbage-collector settings (see gc.go). What it allocates
// lives for a unit or a chunk. A soft limit of 320 MiB made the collector
// return memory to the OS and fault it back in (4-6 s of system time in a
// 3.8M-event run); 448 MiB with GOGC=300 took a year of 1,000 pipelines
// from 15.9-18.3 to 11.5 CPU seconds at a peak RSS of 352 MiB, under the
// 512 MiB budget (docs/backfill.md, Performance).
const (
	backfillGCPercent   = 300
	backfillMemoryLimit = 448 << 20
)

// runBackfill is `handoff backfill`: diagnose every batch of a range of
// business dates from ClickHouse as of one time, publish the diagnoses to
// the diagnoses topic, and print a summary (docs/backfill.md).
func runBackfill(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	return backfillCmd(ctx, args, stdout, stderr, time.Now(), nil)
}

// backfillFlags defines backfill's flags on fs over cfg and c.
func backfillFlags(fs *flag.FlagSet, cfg *backfillConfig, c *backfill.Command, pipelines *stringList, cpuProfile *string) {
	fs.StringVar(&c.From, "from", "", "first business date to diagnose, YYYY-MM-DD (required)")
	fs.StringVar(&c.To, "to", "", "last business date to diagnose, YYYY-MM-DD, inclusive (required)")
	fs.Var(pipelines, "pipeline", "pipeline to diagnose (repeatable); default: every pipeline with events in the range")
	fs.StringVar(&cfg.AsOf, "as-of", cfg.AsOf, "diagnose as of this RFC 3339 time (env HANDOFF_AS_OF); default: now")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file, or a directory of them (env HANDOFF_CONTRACTS); default: the default contract")
	fs.BoolVar(&c.Publish, "publish", false, "publish the diagnoses to Kafka; without it nothing is published, even with HANDOFF_KAFKA_BROKERS set")
	fs.BoolVar(&c.DryRun, "dry-run", false, "do not publish (the default): print the summary (and with --format json the diagnoses) only")
	fs.StringVar(&cfg.Format, "format", cfg.Format, "text: the summary on standard output; json: the diagnoses as one JSON array on standard output, the summary on standard error (env HANDOFF_FORMAT)")
	cfg.ClickHouse.RegisterFlags(fs)
	cfg.Kafka.RegisterFlags(fs)
	fs.StringVar(&cfg.Topic, "diagnoses-topic", cfg.Topic, "topic the diagnoses are published to (env HANDOFF_DIAGNOSES_TOPIC)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "pipelines folded in parallel (env HANDOFF_BACKFILL_WORKERS); default: the number of CPUs")
	fs.IntVar(&cfg.UnitRows, "unit-rows", cfg.UnitRows, "most stored rows one read query covers (env HANDOFF_BACKFILL_UNIT_ROWS); default 200000")
	fs.BoolVar(&cfg.ReadAhead, "read-ahead", cfg.ReadAhead, "each worker reads the next unit while it folds one (env HANDOFF_BACKFILL_READ_AHEAD): more memory, the server and the fold overlap")
	fs.DurationVar(&c.ProgressInterval, "progress-interval", 0, "how often progress is drawn: default 200ms on a terminal, 10s otherwise")
	fs.StringVar(cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
}

// backfillCmd is the command; now is the default as-of time, and
// terminal (nil: whether stderr is one) chooses the progress bar.
func backfillCmd(ctx context.Context, args []string, stdout, stderr io.Writer, now time.Time, terminal *bool) error {
	var cfg backfillConfig
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	var (
		c          backfill.Command
		pipelines  stringList
		cpuProfile string
	)
	fs := flag.NewFlagSet("handoff backfill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backfillFlags(fs, &cfg, &c, &pipelines, &cpuProfile)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff backfill --from DATE --to DATE [--pipeline P ...] [--as-of T] [--contract PATH] [--publish|--dry-run] [--format text|json]")
		fmt.Fprintln(stderr, "\nDiagnose every stored batch of a range of business dates from ClickHouse as of one time, the same way")
		fmt.Fprintln(stderr, "diagnose does; publish the diagnoses to the diagnoses topic (handoff ingest stores them in diagnoses_v2);")
		fmt.Fprintln(stderr, "print a summary. Exit status: 0 done, 2 bad usage or a --pipeline with no events in the range,")
		fmt.Fprintln(stderr, "3 failure. See docs/backfill.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// Check every option before connecting.
	asOf, err := parseAsOf(cfg.AsOf, now)
	if err != nil {
		return err
	}
	c.Pipelines, c.AsOf, c.Format = pipelines, asOf, cfg.Format
	c.Kafka, c.DiagnosesTopic, c.ClickHouse = cfg.Kafka, cfg.Topic, cfg.ClickHouse
	c.Workers, c.UnitRows, c.ReadAhead = cfg.Workers, cfg.UnitRows, cfg.ReadAhead
	if err := c.Prepare(); err != nil {
		return err
	}
	contracts, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	c.Contracts = contracts
	if terminal != nil {
		c.Terminal = *terminal
	} else if f, ok := stderr.(*os.File); ok {
		c.Terminal = progress.IsTerminal(f)
	}
	defer gcDefaults(ctx, backfillGCPercent, backfillMemoryLimit)()
	stop, err := cpuProfileTo(cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	return c.Run(ctx, stdout, stderr)
}

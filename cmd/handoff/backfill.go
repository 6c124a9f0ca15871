package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/internal/progress"
	"github.com/handoff-dev/handoff/judge/backfill"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/schema"
)

// backfillConfig is backfill's configuration: environment first, flags win.
type backfillConfig struct {
	ClickHouse string   `env:"HANDOFF_CLICKHOUSE_ADDR"`
	Database   string   `env:"HANDOFF_CLICKHOUSE_DATABASE" envDefault:"handoff"`
	User       string   `env:"HANDOFF_CLICKHOUSE_USER"`
	Password   string   `env:"HANDOFF_CLICKHOUSE_PASSWORD"`
	Brokers    []string `env:"HANDOFF_KAFKA_BROKERS" envSeparator:","`
	Topic      string   `env:"HANDOFF_DIAGNOSES_TOPIC" envDefault:"handoff.diagnoses"`
	Partitions int      `env:"HANDOFF_TOPIC_PARTITIONS" envDefault:"6"`
	Contracts  string   `env:"HANDOFF_CONTRACTS"`
	AsOf       string   `env:"HANDOFF_AS_OF"`
	Format     string   `env:"HANDOFF_FORMAT"`
	Workers    int      `env:"HANDOFF_BACKFILL_WORKERS"`
	UnitRows   int      `env:"HANDOFF_BACKFILL_UNIT_ROWS"`
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
// 512 MiB target (docs/backfill.md, Performance).
const (
	backfillGCPercent   = 300
	backfillMemoryLimit = 448 << 20
)

// topBreaks is how many breaks the summary lists.
const topBreaks = 10

// runBackfill is `handoff backfill`: diagnose every batch of a range of
// business dates from ClickHouse as of one time, publish the diagnoses to
// the diagnoses topic, and print a summary (docs/backfill.md).
func runBackfill(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	return backfillCmd(ctx, args, stdout, stderr, time.Now(), nil)
}

// backfillCmd is the command; now is the default as-of time, and
// terminal (nil: whether stderr is one) chooses the progress bar.
func backfillCmd(ctx context.Context, args []string, stdout, stderr io.Writer, now time.Time, terminal *bool) error {
	var cfg backfillConfig
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	var (
		pipelines      stringList
		from, to       string
		publish, dry   bool
		brokers        = strings.Join(cfg.Brokers, ",")
		progressEveryF time.Duration
		cpuProfile     string
	)
	fs := flag.NewFlagSet("handoff backfill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&from, "from", "", "first business date to diagnose, YYYY-MM-DD (required)")
	fs.StringVar(&to, "to", "", "last business date to diagnose, YYYY-MM-DD, inclusive (required)")
	fs.Var(&pipelines, "pipeline", "pipeline to diagnose (repeatable); default: every pipeline with events in the range")
	fs.StringVar(&cfg.AsOf, "as-of", cfg.AsOf, "diagnose as of this RFC 3339 time (env HANDOFF_AS_OF); default: now")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file, or a directory of them (env HANDOFF_CONTRACTS); default: the default contract")
	fs.BoolVar(&publish, "publish", false, "publish the diagnoses to Kafka; without it nothing is published, even with HANDOFF_KAFKA_BROKERS set")
	fs.BoolVar(&dry, "dry-run", false, "do not publish (the default): print the summary (and with --format json the diagnoses) only")
	fs.StringVar(&cfg.Format, "format", cfg.Format, "text: the summary on standard output; json: the diagnoses as one JSON array on standard output, the summary on standard error (env HANDOFF_FORMAT)")
	fs.StringVar(&cfg.ClickHouse, "clickhouse-addr", cfg.ClickHouse, "ClickHouse native protocol host:port (env HANDOFF_CLICKHOUSE_ADDR; required)")
	fs.StringVar(&cfg.Database, "clickhouse-database", cfg.Database, "database of handoff's tables (env HANDOFF_CLICKHOUSE_DATABASE)")
	fs.StringVar(&brokers, "kafka-brokers", brokers, "Kafka brokers host:port[,...] that --publish publishes to (env HANDOFF_KAFKA_BROKERS)")
	fs.StringVar(&cfg.Topic, "diagnoses-topic", cfg.Topic, "topic the diagnoses are published to (env HANDOFF_DIAGNOSES_TOPIC)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "pipelines folded in parallel (env HANDOFF_BACKFILL_WORKERS); default: the number of CPUs")
	fs.IntVar(&cfg.UnitRows, "unit-rows", cfg.UnitRows, "most stored rows one read query covers (env HANDOFF_BACKFILL_UNIT_ROWS); default 50000")
	fs.DurationVar(&progressEveryF, "progress-interval", 0, "how often progress is drawn: default 200ms on a terminal, 10s otherwise")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff backfill --from DATE --to DATE [--pipeline P ...] [--as-of T] [--contract PATH] [--publish|--dry-run] [--format text|json]")
		fmt.Fprintln(stderr, "\nDiagnose every stored batch of a range of business dates from ClickHouse as of one time, the same way")
		fmt.Fprintln(stderr, "diagnose does; publish the diagnoses to the diagnoses topic (handoff ingest stores them in diagnoses_v2);")
		fmt.Fprintln(stderr, "print a summary. Exit status: 0 done, 2 bad usage, 3 failure. See docs/backfill.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}

	// Check every option before connecting.
	var bc backfill.Config
	for _, d := range []struct {
		flag, v string
		to      *model.Date
	}{{"from", from, &bc.From}, {"to", to, &bc.To}} {
		if d.v == "" {
			return usageError("--%s DATE is required (YYYY-MM-DD)", d.flag)
		}
		date, err := model.ParseDate(d.v)
		if err != nil {
			return usageError("--%s %q: %v", d.flag, d.v, err)
		}
		*d.to = date
	}
	if bc.To.Compare(bc.From) < 0 {
		return usageError("--to %s is before --from %s", bc.To, bc.From)
	}
	if err := checkFormat(&cfg.Format); err != nil {
		return err
	}
	asOf, err := parseAsOf(cfg.AsOf, now)
	if err != nil {
		return err
	}
	bc.AsOf = asOf
	bc.AsOf = bc.AsOf.UTC().Truncate(time.Millisecond)
	for _, p := range pipelines {
		if strings.TrimSpace(p) == "" {
			return usageError("--pipeline: empty name")
		}
	}
	bc.Pipelines = pipelines
	if cfg.Workers < 0 {
		return usageError("--workers %d: want a positive number (0: the number of CPUs)", cfg.Workers)
	}
	bc.Workers = cfg.Workers
	if cfg.UnitRows < 0 {
		return usageError("--unit-rows %d: want a positive number (0: the default)", cfg.UnitRows)
	}
	bc.UnitRows = cfg.UnitRows
	if bc.UnitRows == 0 {
		bc.UnitRows = backfill.DefaultUnitRows
	}
	if publish && dry {
		return usageError("--publish and --dry-run are exclusive")
	}
	var bl []string
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			bl = append(bl, b)
		}
	}
	if publish && len(bl) == 0 {
		return usageError("--publish needs Kafka: set HANDOFF_KAFKA_BROKERS or --kafka-brokers host:port")
	}
	// Publishing is asked for, never implied by the environment: the
	// variables that configure ingest would otherwise turn a look at
	// history into writes to the shared diagnoses topic.
	if publish && cfg.Topic == "" {
		return usageError("--diagnoses-topic: empty: name the topic to publish to, or use --dry-run")
	}
	if cfg.ClickHouse == "" {
		return usageError("--clickhouse-addr is required (or HANDOFF_CLICKHOUSE_ADDR): backfill reads the stored history")
	}
	if err := schema.CheckDatabase(cfg.Database); err != nil {
		return usageError("--clickhouse-database: %v", err)
	}
	contracts, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	bc.Contracts = contracts

	conn, err := chconn.Open(ctx, chconn.Config{Addr: cfg.ClickHouse, User: cfg.User, Password: cfg.Password})
	if err != nil {
		return err
	}
	defer conn.Close()
	st, err := history.New(conn, cfg.Database)
	if err != nil {
		return usageError("--clickhouse-database: %v", err)
	}
	st.WindowRows = bc.UnitRows // a large pipeline is read in windows of the same size
	st.ReplayOnly = true        // a diagnosis reads neither spec nor attrs
	var pub *backfill.Publisher
	if publish {
		pub, err = backfill.NewPublisher(ctx, backfill.KafkaConfig{Brokers: bl, Topic: cfg.Topic, Partitions: cfg.Partitions})
		if err != nil {
			return err
		}
		defer pub.Close()
	}
	defer gcDefaults(backfillGCPercent, backfillMemoryLimit)()
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return usageError("--cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	isTerm := false
	if terminal != nil {
		isTerm = *terminal
	} else if f, ok := stderr.(*os.File); ok {
		isTerm = progress.IsTerminal(f)
	}
	var batchesDone atomic.Int64
	bar := progress.New(stderr, "backfill", "events", 0, progress.Options{Terminal: isTerm, Interval: progressEveryF,
		Detail: func() string { return progress.Thousands(batchesDone.Load()) + " batches" }})
	out := bufio.NewWriterSize(stdout, 1<<20)
	sep := "[\n"
	var hooks backfill.Hooks
	hooks.Planned = func(p backfill.Plan) { bar.SetTotal(p.Rows) }
	hooks.Read = bar.Add
	hooks.Chunk = func(c *backfill.Chunk) error {
		batchesDone.Add(int64(c.Len()))
		if pub != nil {
			if err := pub.Publish(ctx, c); err != nil {
				return err
			}
		}
		if cfg.Format == "json" {
			for i := range c.Len() {
				if _, err := io.WriteString(out, sep); err != nil {
					return writing(err)
				}
				sep = ",\n"
				if _, err := out.Write(c.Diagnosis(i)); err != nil {
					return writing(err)
				}
			}
		}
		return nil
	}
	bar.Start()
	sum, runErr := backfill.Run(ctx, st, bc, hooks)
	if runErr == nil && pub != nil {
		runErr = pub.Wait()
	}
	if sum != nil {
		bar.SetTotal(sum.Events) // stored rows counted copies: end at 100%
	}
	bar.Stop()
	if runErr != nil {
		return runErr
	}
	if cfg.Format == "json" {
		end := "\n]\n"
		if sep == "[\n" {
			end = "[]\n"
		}
		if _, err := io.WriteString(out, end); err != nil {
			return writing(err)
		}
	}
	if err := out.Flush(); err != nil {
		return writing(err)
	}
	if pub != nil {
		sum.Published = pub.Acked()
	}
	summaryTo := stdout
	if cfg.Format == "json" {
		summaryTo = stderr
	}
	if err := sum.WriteText(summaryTo, bc.From, bc.To, bc.AsOf, topBreaks); err != nil {
		return writing(err)
	}
	return nil
}

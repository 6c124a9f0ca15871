package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/analyzer/report"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// diagnoseConfig is diagnose's configuration: environment variables first,
// then flags, which win.
type diagnoseConfig struct {
	Events    string `env:"HANDOFF_EVENTS"`
	Contracts string `env:"HANDOFF_CONTRACTS"`
	AsOf      string `env:"HANDOFF_AS_OF"`
	Format    string `env:"HANDOFF_FORMAT"`
	// TZ is the zone the text shows beside UTC instead of the contracts'.
	TZ string `env:"HANDOFF_TZ"`
	// ClickHouse selects ClickHouse as the source; only the flag does, so
	// that HANDOFF_CLICKHOUSE_ADDR in the environment never overrides
	// --events.
	ClickHouse string
	Database   string `env:"HANDOFF_CLICKHOUSE_DATABASE" envDefault:"handoff"`
	User       string `env:"HANDOFF_CLICKHOUSE_USER"`
	Password   string `env:"HANDOFF_CLICKHOUSE_PASSWORD"`
	Pipeline   string
	From, To   string

	Batch      string
	Strict     bool
	Progress   bool
	CPUProfile string
}

// progressEvery is how often diagnose logs its progress while reading.
const progressEvery = 5 * time.Second

func runDiagnose(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return diagnose(ctx, args, stdin, stdout, stderr, time.Now())
}

// diagnose is the diagnose command; now is the default as-of time.
func diagnose(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, now time.Time) (err error) {
	started := time.Now()
	var cfg diagnoseConfig
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	fs := flag.NewFlagSet("handoff diagnose", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Events, "events", cfg.Events, "JSON-lines file of delivery events, - for standard input (env HANDOFF_EVENTS)")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file, or a directory of them (env HANDOFF_CONTRACTS); default: the default contract")
	fs.StringVar(&cfg.AsOf, "as-of", cfg.AsOf, "diagnose as of this RFC 3339 time (env HANDOFF_AS_OF); default: now")
	fs.StringVar(&cfg.Format, "format", cfg.Format, "output format, text or json (env HANDOFF_FORMAT); default: text")
	fs.StringVar(&cfg.TZ, "tz", cfg.TZ, "time zone the text shows beside UTC instead of each contract's: an IANA name or local (env HANDOFF_TZ)")
	fs.StringVar(&cfg.Batch, "batch", "", "print only this batch, pipeline/business_date/batch_id (the others still count for continuity)")
	fs.BoolVar(&cfg.Strict, "strict", false, "stop at the first line that fails validation (exit 2)")
	fs.BoolVar(&cfg.Progress, "progress", false, "log progress every 5s even when standard error is a terminal")
	fs.StringVar(&cfg.ClickHouse, "clickhouse", "", "read events from ClickHouse at ADDR (host:port, native protocol) instead of a file; needs --pipeline or --batch")
	fs.StringVar(&cfg.Database, "database", cfg.Database, "ClickHouse database of handoff's tables (env HANDOFF_CLICKHOUSE_DATABASE)")
	fs.StringVar(&cfg.Pipeline, "pipeline", "", "with --clickhouse: the pipeline to read")
	fs.StringVar(&cfg.From, "from", "", "with --clickhouse: first business date to read, YYYY-MM-DD (default: open)")
	fs.StringVar(&cfg.To, "to", "", "with --clickhouse: last business date to read, YYYY-MM-DD (default: open)")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff diagnose --events FILE|- [--contract FILE|DIR] [--as-of RFC3339] [--format text|json] [--batch KEY] [--strict]")
		fmt.Fprintln(stderr, "       handoff diagnose --clickhouse ADDR (--pipeline P [--from DATE] [--to DATE] | --batch KEY) [--contract ...] [--as-of ...]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Replays delivery events and says, for every batch, where its delivery stopped.")
		fmt.Fprintln(stderr, "Exit status: 0 every batch delivered, 1 some batch not delivered, 2 bad usage or input, 3 failure.")
		fmt.Fprintln(stderr)
		fs.VisitAll(func(f *flag.Flag) {
			if f.Usage == "" { // hidden
				return
			}
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(stderr, "  --%s %s\n    \t%s\n", f.Name, name, usage)
		})
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}

	// Check every option before reading anything.
	if err := checkFormat(&cfg.Format); err != nil {
		return err
	}
	asOf, err := parseAsOf(cfg.AsOf, now)
	if err != nil {
		return err
	}
	var only model.BatchKey
	if cfg.Batch != "" {
		k, err := model.ParseBatchKey(cfg.Batch)
		if err != nil {
			return usageError("--batch: %v", err)
		}
		only = k
	}
	zone, err := cliflag.ParseZone(cfg.TZ)
	if err != nil {
		return usageError("--tz: %v", err)
	}
	contracts, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	src, err := openSource(ctx, cfg, stdin, only, contracts, asOf)
	if err != nil {
		return err
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
	}

	// The folded events of a large run are a few hundred MiB and stay live
	// to the end: collect less often, under a soft limit.
	defer gcDefaults(diagnoseGCPercent, softMemoryLimit)()
	sum := &summary{rejected: map[model.RejectKind]int{}}
	msgs := bufio.NewWriter(stderr)
	defer msgs.Flush()
	var log *slog.Logger
	if cfg.Progress || !isTerminal(stderr) {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	rep := &reporter{w: msgs, name: src.name(), strict: cfg.Strict, log: log, started: started, next: started.Add(progressEvery), sum: sum}
	out := bufio.NewWriterSize(stdout, 1<<20)
	d := &diagnoser{src: src, rep: rep, sum: sum, out: out, contracts: contracts, asOf: asOf, show: report.Options{Zone: zone}}
	switch {
	case cfg.Batch != "":
		err = d.one(ctx, only, cfg.Format)
	case cfg.Format == "json":
		err = d.json(ctx)
	default:
		err = d.text(ctx)
	}
	if err == nil {
		err = writing(out.Flush())
	}
	if err != nil {
		msgs.Flush()
		return err
	}
	sum.print(msgs, time.Since(started))
	if err := msgs.Flush(); err != nil {
		return err
	}
	if sum.notDelivered() > 0 {
		return &exitError{code: exitNotDelivered}
	}
	return nil
}

// loadContracts loads --contract: a file or a directory. Errors name the
// file as given (relative to its parent directory) and its line.
func loadContracts(path string) (*contract.Set, error) {
	if path == "" {
		return nil, nil // a nil Set gives every pipeline the default contract
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, usageError("--contract %s: %v", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, usageError("--contract: %v", err)
	}
	set, err := contract.LoadFS(os.DirFS(filepath.Dir(abs)), filepath.Base(abs))
	if err != nil {
		return nil, usageError("--contract %s: %v", path, err)
	}
	return set, nil
}

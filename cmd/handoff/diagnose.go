package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/judge/diagnose"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// diagnoseEnv is diagnose's configuration: environment variables first,
// then flags, which win. ClickHouse is the source only when
// --clickhouse-addr is given on the command line, so that a
// HANDOFF_CLICKHOUSE_ADDR set for ingest never turns a file diagnosis
// into a database one.
type diagnoseEnv struct {
	Events    string `env:"HANDOFF_EVENTS"`
	Contracts string `env:"HANDOFF_CONTRACTS"`
	AsOf      string `env:"HANDOFF_AS_OF"`
	Format    string `env:"HANDOFF_FORMAT"`
	// TZ is the zone the text shows beside UTC instead of the contracts'.
	TZ         string `env:"HANDOFF_TZ"`
	ClickHouse chconfig.Service
}

func runDiagnose(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return diagnoseCmd(ctx, args, stdin, stdout, stderr, time.Now())
}

// diagnoseFlags defines diagnose's flags on fs over cfg and c.
func diagnoseFlags(fs *flag.FlagSet, cfg *diagnoseEnv, c *diagnose.Command, cpuProfile *string, stderr io.Writer) {
	fs.StringVar(&cfg.Events, "events", cfg.Events, "JSON-lines file of delivery events, - for standard input (env HANDOFF_EVENTS)")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file, or a directory of them (env HANDOFF_CONTRACTS); default: the default contract")
	fs.StringVar(&cfg.AsOf, "as-of", cfg.AsOf, "diagnose as of this RFC 3339 time (env HANDOFF_AS_OF); default: now")
	fs.StringVar(&cfg.Format, "format", cfg.Format, "output format, text or json (env HANDOFF_FORMAT); default: text")
	fs.StringVar(&cfg.TZ, "tz", cfg.TZ, "time zone the text shows beside UTC instead of each contract's: an IANA name or local (env HANDOFF_TZ)")
	fs.StringVar(&c.Batch, "batch", "", "print only this batch, pipeline/business_date/batch_id (the others still count for continuity)")
	fs.BoolVar(&c.Strict, "strict", false, "stop at the first line that fails validation (exit 2)")
	fs.BoolVar(&c.Progress, "progress", false, "log progress every 5s even when standard error is a terminal")
	cfg.ClickHouse.RegisterFlags(fs, chconfig.WithLegacySpellings(stderr))
	fs.StringVar(&c.Source.Pipeline, "pipeline", "", "with --clickhouse-addr: the pipeline to read")
	fs.StringVar(&c.Source.From, "from", "", "with --clickhouse-addr: first business date to read, YYYY-MM-DD (default: open)")
	fs.StringVar(&c.Source.To, "to", "", "with --clickhouse-addr: last business date to read, YYYY-MM-DD (default: open)")
	fs.StringVar(cpuProfile, "cpuprofile", "", "")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff diagnose --events FILE|- [--contract FILE|DIR] [--as-of RFC3339] [--format text|json] [--batch KEY] [--strict]")
		fmt.Fprintln(stderr, "       handoff diagnose --clickhouse-addr ADDR (--pipeline P [--from DATE] [--to DATE] | --batch KEY) [--contract ...] [--as-of ...]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Replays delivery events and says, for every batch, where its delivery stopped.")
		fmt.Fprintln(stderr, "Exit status: 0 every batch delivered, 1 some batch not delivered, 2 bad usage or input")
		fmt.Fprintln(stderr, "(a --pipeline or --batch that matches nothing included), 3 failure.")
		fmt.Fprintln(stderr)
		fs.VisitAll(func(f *flag.Flag) {
			if f.Usage == "" { // hidden
				return
			}
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(stderr, "  --%s %s\n    \t%s\n", f.Name, name, usage)
		})
	}
}

// diagnoseCmd is the diagnose command; now is the default as-of time.
func diagnoseCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, now time.Time) (err error) {
	var cfg diagnoseEnv
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	var (
		c          diagnose.Command
		cpuProfile string
	)
	fs := flag.NewFlagSet("handoff diagnose", flag.ContinueOnError)
	fs.SetOutput(stderr)
	diagnoseFlags(fs, &cfg, &c, &cpuProfile, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// Check every option before reading anything.
	if err := checkFormat(&cfg.Format); err != nil {
		return err
	}
	if c.AsOf, err = parseAsOf(cfg.AsOf, now); err != nil {
		return err
	}
	if c.Contracts, err = loadContracts(cfg.Contracts); err != nil {
		return err
	}
	if c.Zone, err = cliflag.ParseZone(cfg.TZ); err != nil {
		return usageError("--tz: %v", err)
	}
	c.Source.Events, c.Format, c.Terminal = cfg.Events, cfg.Format, isTerminal(stderr)
	if cliflag.Given(fs, "clickhouse-addr", "clickhouse") {
		c.Source.ClickHouse = &cfg.ClickHouse
	}
	stop, err := cpuProfileTo(cpuProfile)
	if err != nil {
		return err
	}
	defer func() {
		if serr := stop(); err == nil && serr != nil {
			err = serr
		}
	}()
	// The folded events of a large run are a few hundred MiB and stay live
	// to the end: collect less often, under a soft limit.
	defer gcDefaults(ctx, diagnoseGCPercent, softMemoryLimit)()
	return c.Run(ctx, stdin, stdout, stderr)
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

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// writing says that err, if any, happened while writing the output.
func writing(err error) error {
	if err != nil {
		return fmt.Errorf("writing the diagnoses: %w", err)
	}
	return nil
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/judge/suggest"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconfig"
	"github.com/handoff-dev/handoff/store/history"
)

// contractsConfig is contracts suggest's configuration: where ClickHouse
// is comes from the environment, the rest describes one run.
type contractsConfig struct {
	ClickHouse chconfig.Service
}

// runContracts is `handoff contracts suggest`, the one subcommand; flags
// without it (-h) are suggest's.
func runContracts(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch {
	case len(args) > 0 && args[0] == "suggest":
		args = args[1:]
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		return usageError("unexpected arguments: %s (want: handoff contracts suggest [flags])", strings.Join(args, " "))
	}
	return contractsSuggest(ctx, args, stdin, stdout, stderr)
}

// contractsSuggest is `handoff contracts suggest`.
func contractsSuggest(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cfg contractsConfig
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	var (
		pipelines, zones      stringList
		from, to, events, out string
		diffDir               string
	)
	fs := flag.NewFlagSet("handoff contracts suggest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&from, "from", "", "first business date to learn from, YYYY-MM-DD (required with ClickHouse)")
	fs.StringVar(&to, "to", "", "last business date to learn from, YYYY-MM-DD, inclusive (required with ClickHouse)")
	fs.Var(&pipelines, "pipeline", "pipeline name or glob such as \"finance.*\" (repeatable, or a comma list); default: every pipeline")
	fs.StringVar(&events, "events", "", "read the history from this file of JSON lines (- for standard input) instead of ClickHouse")
	fs.StringVar(&out, "out", "", "write one contract file per pipeline into this directory (never overwriting); default: print them")
	fs.StringVar(&diffDir, "diff", "", "compare the suggestions with the contracts in this directory instead of printing them")
	fs.Var(&zones, "zone", "candidate time zone (repeatable, or a comma list, in order of preference); default: a list of common zones")
	cfg.ClickHouse.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff contracts suggest (--from DATE --to DATE | --events FILE) [--pipeline P ...] [--out DIR | --diff DIR]")
		fmt.Fprintln(stderr, "\nLearn from the delivered history what each pipeline's contract would say (schedule, holidays, name")
		fmt.Fprintln(stderr, "templates, required boundaries, time zone, deadlines), with the evidence as comments. Exit status: 0")
		fmt.Fprintln(stderr, "done, 1 --diff found a difference, 2 bad usage, 3 failure. See docs/learned.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sc, err := suggestScope(from, to, cliflag.Items(pipelines), cliflag.Items(zones))
	if err != nil {
		return err
	}
	if out != "" && diffDir != "" {
		return usageError("--out and --diff are exclusive: write the suggestions or compare them")
	}
	src, closeSrc, err := suggestSource(ctx, cfg, events, sc, stdin)
	if err != nil {
		return err
	}
	defer closeSrc()
	ss, err := suggest.Learn(ctx, src, sc)
	if err != nil {
		return err
	}
	if f, ok := src.(*suggest.File); ok && f.Rejected > 0 {
		fmt.Fprintf(stderr, "handoff contracts suggest: %s: %d lines were not valid events, skipped\n", f.Name, f.Rejected)
	}
	return suggestOutput(stdout, ss, out, diffDir)
}

// suggestScope checks the flags that say what to learn from.
func suggestScope(from, to string, patterns, zones []string) (suggest.Config, error) {
	var sc suggest.Config
	for _, d := range []struct {
		flag, v string
		to      *model.Date
	}{{"from", from, &sc.From}, {"to", to, &sc.To}} {
		if d.v == "" {
			continue
		}
		date, err := model.ParseDate(d.v)
		if err != nil {
			return sc, usageError("--%s %q: want a business date YYYY-MM-DD (%v)", d.flag, d.v, err)
		}
		*d.to = date
	}
	if !sc.From.IsZero() && !sc.To.IsZero() && sc.To.Compare(sc.From) < 0 {
		return sc, usageError("--to %s is before --from %s", sc.To, sc.From)
	}
	if err := suggest.CheckPatterns(patterns); err != nil {
		return sc, usageError("%v", err)
	}
	sc.Patterns = patterns
	if len(zones) == 0 {
		zones = learn.DefaultZones()
	}
	locs, err := contract.LoadZones(zones)
	if err != nil {
		return sc, usageError("--zone: %v", err)
	}
	sc.Zones = locs
	return sc, nil
}

// suggestSource opens the events file, or ClickHouse.
func suggestSource(ctx context.Context, cfg contractsConfig, events string, sc suggest.Config, stdin io.Reader) (suggest.Source, func(), error) {
	switch events {
	case "-":
		return &suggest.File{Name: "stdin", R: stdin}, func() {}, nil
	case "":
	default:
		f, err := os.Open(events)
		if err != nil {
			return nil, nil, usageError("--events: %v", err)
		}
		return &suggest.File{Name: events, R: f}, func() { f.Close() }, nil
	}
	if sc.From.IsZero() || sc.To.IsZero() {
		return nil, nil, usageError("--from DATE and --to DATE are required to read ClickHouse (or give --events FILE)")
	}
	if err := cfg.ClickHouse.Check(); err != nil {
		return nil, nil, usageError("%v", err)
	}
	conn, err := cfg.ClickHouse.Open(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := history.New(conn, cfg.ClickHouse.Database)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return suggest.Store{History: st}, func() { conn.Close() }, nil
}

// suggestOutput prints, writes or compares the suggestions.
func suggestOutput(stdout io.Writer, ss []learn.Suggestion, out, diffDir string) error {
	switch {
	case diffDir != "":
		if _, err := os.Stat(diffDir); err != nil {
			return usageError("--diff: %v", err)
		}
		n, err := suggest.Diff(stdout, os.DirFS(diffDir), ss)
		if err != nil {
			return err
		}
		if n > 0 {
			return &exitError{code: exitNotDelivered}
		}
		return nil
	case out != "":
		return suggest.WriteDir(stdout, out, ss)
	}
	return suggest.Print(stdout, ss)
}

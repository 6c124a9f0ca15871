package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/query/findings"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// findingsConfig is findings' configuration: the environment first, flags
// win. Only where ClickHouse is comes from the environment; the rest
// describes one run.
type findingsConfig struct {
	ClickHouse chconfig.Service
	// Contracts and TZ choose the zone shown beside UTC: the reader's
	// (TZ), else each pipeline's contract's.
	Contracts string `env:"HANDOFF_CONTRACTS"`
	TZ        string `env:"HANDOFF_TZ"`
}

// runFindings is `handoff findings`: the detector's stored findings, open
// ones by default (docs/findings.md).
func runFindings(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	return findingsCmd(ctx, args, stdout, stderr, time.Now())
}

// findingsCmd is the command; now is the default --as-of.
func findingsCmd(ctx context.Context, args []string, stdout, stderr io.Writer, now time.Time) error {
	var cfg findingsConfig
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	var (
		pipelines, kinds stringList
		asOfS            string
		c                = findings.Command{State: "open", Format: "text", Limit: strconv.Itoa(findings.DefaultLimit)}
	)
	fs := flag.NewFlagSet("handoff findings", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&pipelines, "pipeline", "pipeline name, or a prefix ending in * (repeatable, or a comma list); default: every pipeline")
	fs.StringVar(&c.From, "from", "", "first business date, YYYY-MM-DD; default: no lower bound")
	fs.StringVar(&c.To, "to", "", "last business date, YYYY-MM-DD, inclusive; default: no upper bound")
	fs.StringVar(&c.State, "state", c.State, "state of a finding's latest record: open, resolved or all")
	fs.Var(&kinds, "kind", "finding kind: overdue, missing, failed or an anomaly kind (repeatable, or a comma list); default: every kind")
	fs.StringVar(&c.Limit, "limit", c.Limit, fmt.Sprintf("print at most this many findings (1 to %d); the output says when more match", findings.MaxLimit))
	fs.StringVar(&c.Format, "format", c.Format, "text (an aligned table and a summary line), json (one object) or jsonl (one finding per line)")
	fs.BoolVar(&c.FailOnOpen, "fail-on-open", false, "exit 1 when an open finding is printed")
	fs.StringVar(&c.GroupBy, "group-by", "", "print one line per group instead of per finding: "+strings.Join(findings.Groupings(), " or ")+" (open, kinds, oldest, worst lateness)")
	fs.StringVar(&asOfS, "as-of", "", "RFC 3339 time the lateness of open findings is counted to; default: now")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contracts whose zones the text shows beside UTC (env HANDOFF_CONTRACTS)")
	fs.StringVar(&cfg.TZ, "tz", cfg.TZ, "time zone the text shows beside UTC instead of each contract's: an IANA name or local (env HANDOFF_TZ)")
	cfg.ClickHouse.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff findings [--pipeline P ...] [--from DATE] [--to DATE] [--state open|resolved|all] [--kind K ...]")
		fmt.Fprintln(stderr, "                        [--limit N] [--format text|json|jsonl] [--fail-on-open] [--group-by pipeline|owner|root]")
		fmt.Fprintln(stderr, "\nPrint the streaming detector's findings stored in ClickHouse (findings_v2), each in its latest state,")
		fmt.Fprintln(stderr, "sorted by business date, pipeline, batch and kind. Exit status: 0 done, 1 an open finding printed with")
		fmt.Fprintln(stderr, "--fail-on-open, 2 bad usage, 3 failure. See docs/findings.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// Check every flag before connecting.
	c.Pipelines, c.Kinds = pipelines, kinds
	if err := c.Prepare(); err != nil {
		return err
	}
	var err error
	if c.AsOf, err = parseAsOf(asOfS, now); err != nil {
		return err
	}
	if c.Zone, err = textZones(cfg.Contracts, cfg.TZ); err != nil {
		return err
	}
	if err := cfg.ClickHouse.Check(); err != nil {
		return usageError("%v", err)
	}
	conn, err := cfg.ClickHouse.Open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return c.Run(ctx, conn, cfg.ClickHouse.Database, stdout, stderr)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/findings"
)

// findingsConfig is findings' configuration: the environment first, flags
// win. Only where ClickHouse is comes from the environment; the rest
// describes one run.
type findingsConfig struct {
	ClickHouse clickhouseConfig
	// Contracts and TZ choose the zone shown beside UTC: the reader's
	// (TZ), else each pipeline's contract's.
	Contracts string `env:"HANDOFF_CONTRACTS"`
	TZ        string `env:"HANDOFF_TZ"`
}

// Bounds of --limit: enough for any on-call screen, and a bound on what
// one run holds in memory.
const (
	defaultFindingsLimit = 1000
	maxFindingsLimit     = 100_000
)

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
		pipelines, kinds     stringList
		from, to, asOfS      string
		state, format, limit = "open", "text", strconv.Itoa(defaultFindingsLimit)
		failOnOpen           bool
	)
	fs := flag.NewFlagSet("handoff findings", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&pipelines, "pipeline", "pipeline name, or a prefix ending in * (repeatable, or a comma list); default: every pipeline")
	fs.StringVar(&from, "from", "", "first business date, YYYY-MM-DD; default: no lower bound")
	fs.StringVar(&to, "to", "", "last business date, YYYY-MM-DD, inclusive; default: no upper bound")
	fs.StringVar(&state, "state", state, "state of a finding's latest record: open, resolved or all")
	fs.Var(&kinds, "kind", "finding kind: overdue, missing, failed or an anomaly kind (repeatable, or a comma list); default: every kind")
	fs.StringVar(&limit, "limit", limit, fmt.Sprintf("print at most this many findings (1 to %d); the output says when more match", maxFindingsLimit))
	fs.StringVar(&format, "format", format, "text (an aligned table and a summary line), json (one object) or jsonl (one finding per line)")
	fs.BoolVar(&failOnOpen, "fail-on-open", false, "exit 1 when an open finding is printed")
	fs.StringVar(&asOfS, "as-of", "", "RFC 3339 time the lateness of open findings is counted to, in text and JSON; default: now")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file, or a directory of them, whose time zones the text shows beside UTC (env HANDOFF_CONTRACTS); default: UTC alone")
	fs.StringVar(&cfg.TZ, "tz", cfg.TZ, "time zone the text shows beside UTC instead of the contracts': an IANA name or local (env HANDOFF_TZ)")
	cfg.ClickHouse.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff findings [--pipeline P ...] [--from DATE] [--to DATE] [--state open|resolved|all] [--kind K ...]")
		fmt.Fprintln(stderr, "                        [--limit N] [--format text|json|jsonl] [--fail-on-open]")
		fmt.Fprintln(stderr, "\nPrint the streaming detector's findings stored in ClickHouse (findings_v2), each in its latest state,")
		fmt.Fprintln(stderr, "sorted by business date, pipeline, batch and kind. Exit status: 0 done, 1 an open finding printed with")
		fmt.Fprintln(stderr, "--fail-on-open, 2 bad usage, 3 failure. See docs/findings.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}

	// Check every flag before connecting.
	var f findings.Filter
	for _, p := range splitList(pipelines) {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if prefix == "" {
				return usageError("--pipeline %q: give a prefix before the * (or leave --pipeline out for every pipeline)", p)
			}
			f.Prefixes = append(f.Prefixes, prefix)
		} else {
			f.Pipelines = append(f.Pipelines, p)
		}
	}
	for _, d := range []struct {
		flag, v string
		to      *model.Date
	}{{"from", from, &f.From}, {"to", to, &f.To}} {
		if d.v == "" {
			continue
		}
		date, err := model.ParseDate(d.v)
		if err != nil {
			return usageError("--%s %q: want a business date YYYY-MM-DD (%v)", d.flag, d.v, err)
		}
		*d.to = date
	}
	switch state {
	case "all":
	case findings.StateOpen, findings.StateResolved:
		f.State = state
	default:
		return usageError("--state %q: want open, resolved or all", state)
	}
	f.Kinds = splitList(kinds)
	if err := f.Check(); err != nil {
		var fe *findings.FieldError
		if errors.As(err, &fe) {
			return usageError("--%s: %s", fe.Field, fe.Reason)
		}
		return usageError("%v", err)
	}
	n, err := strconv.Atoi(limit)
	if err != nil || n < 1 || n > maxFindingsLimit {
		return usageError("--limit %q: want a whole number from 1 to %d", limit, maxFindingsLimit)
	}
	switch format {
	case "text", "json", "jsonl":
	default:
		return usageError("--format %q: want text, json or jsonl", format)
	}
	asOf, err := parseAsOf(asOfS, now)
	if err != nil {
		return err
	}
	zone, err := textZones(cfg.Contracts, cfg.TZ)
	if err != nil {
		return err
	}
	if err := cfg.ClickHouse.check(); err != nil {
		return err
	}

	conn, err := cfg.ClickHouse.open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := findings.Read(ctx, conn, cfg.ClickHouse.Database, f, findings.ByBatch, n)
	if err != nil {
		return fmt.Errorf("%w (is this the database `handoff ingest` writes? --clickhouse-database / HANDOFF_CLICKHOUSE_DATABASE)", err)
	}
	switch format {
	case "json":
		err = findings.WriteJSON(stdout, res, asOf)
	case "jsonl":
		err = findings.WriteJSONL(stdout, res, asOf)
	default:
		err = findings.WriteText(stdout, res, f.State, findings.Times{AsOf: asOf, Zone: zone})
	}
	if err != nil {
		return fmt.Errorf("write the findings: %w", err)
	}
	if res.Truncated && format != "text" {
		fmt.Fprintf(stderr, "handoff findings: more findings match than --limit %d: narrow the filters or raise --limit\n", n)
	}
	if failOnOpen {
		for i := range res.Findings {
			if res.Findings[i].State == findings.StateOpen {
				return &exitError{code: exitNotDelivered}
			}
		}
	}
	return nil
}

// splitList returns the items of a repeatable flag whose values may also
// be comma lists, spaces around items trimmed. An empty item stays, for
// the filter's check to refuse by name.
func splitList(l stringList) []string {
	var out []string
	for _, v := range l {
		for _, item := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(item))
		}
	}
	return out
}

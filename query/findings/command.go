package findings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/model"
)

// Bounds of --limit: enough for any on-call screen, and a bound on what
// one run holds in memory.
const (
	DefaultLimit = 1000
	MaxLimit     = 100_000
)

// Command is one run of `handoff findings` as its flags give it: the
// values as typed, checked by Prepare before anything connects.
type Command struct {
	// Pipelines and Kinds are the repeatable flags' values, each possibly
	// a comma list; a pipeline ending in * is a prefix.
	Pipelines, Kinds []string
	From, To         string // business dates, YYYY-MM-DD, or empty
	State            string // open, resolved or all
	Limit            string
	Format           string // text, json or jsonl
	FailOnOpen       bool
	// GroupBy, when set, prints the groups of the findings (Groups)
	// instead of the findings: pipeline or owner.
	GroupBy string
	AsOf    time.Time
	// Zone gives the zone the text shows beside UTC for a pipeline (nil:
	// UTC alone).
	Zone func(pipeline string) *time.Location

	filter Filter
	limit  int
}

// Prepare checks every value, naming the flag of what is wrong (a usage
// error, exit 2).
func (c *Command) Prepare() error {
	var f Filter
	for _, p := range cliflag.Items(c.Pipelines) {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if prefix == "" {
				return exitcode.Usagef("--pipeline %q: give a prefix before the * (or leave --pipeline out for every pipeline)", p)
			}
			f.Prefixes = append(f.Prefixes, prefix)
		} else {
			f.Pipelines = append(f.Pipelines, p)
		}
	}
	for _, d := range []struct {
		flag, v string
		to      *model.Date
	}{{"from", c.From, &f.From}, {"to", c.To, &f.To}} {
		if d.v == "" {
			continue
		}
		date, err := model.ParseDate(d.v)
		if err != nil {
			return exitcode.Usagef("--%s %q: want a business date YYYY-MM-DD (%v)", d.flag, d.v, err)
		}
		*d.to = date
	}
	switch c.State {
	case "all":
	case StateOpen, StateResolved:
		f.State = c.State
	default:
		return exitcode.Usagef("--state %q: want open, resolved or all", c.State)
	}
	f.Kinds = cliflag.Items(c.Kinds)
	if err := f.Check(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return exitcode.Usagef("--%s: %s", fe.Field, fe.Reason)
		}
		return exitcode.Usagef("%v", err)
	}
	n, err := strconv.Atoi(c.Limit)
	if err != nil || n < 1 || n > MaxLimit {
		return exitcode.Usagef("--limit %q: want a whole number from 1 to %d", c.Limit, MaxLimit)
	}
	switch c.Format {
	case "text", "json", "jsonl":
	default:
		return exitcode.Usagef("--format %q: want text, json or jsonl", c.Format)
	}
	if c.GroupBy != "" {
		if _, ok := groupKeys[GroupBy(c.GroupBy)]; !ok {
			return exitcode.Usagef("--group-by %q: want %s", c.GroupBy, strings.Join(Groupings(), " or "))
		}
		if c.Format == "jsonl" {
			return exitcode.Usagef("--group-by with --format jsonl: the groups are one summary; want --format text or json")
		}
	}
	c.filter, c.limit = f, n
	return nil
}

// Run reads the findings from db and writes them to stdout in the format
// asked for; a note on stderr says when more match than the limit. With
// FailOnOpen, an open finding printed is exit 1.
func (c *Command) Run(ctx context.Context, conn Querier, db string, stdout, stderr io.Writer) error {
	res, err := Read(ctx, conn, db, c.filter, ByBatch, c.limit)
	if err != nil {
		return fmt.Errorf("%w (is this the database `handoff ingest` writes? --clickhouse-database / HANDOFF_CLICKHOUSE_DATABASE)", err)
	}
	switch {
	case c.GroupBy != "" && c.Format == "json":
		err = WriteGroupsJSON(stdout, res, GroupBy(c.GroupBy), c.AsOf)
	case c.GroupBy != "":
		err = WriteGroupsText(stdout, res, GroupBy(c.GroupBy), c.filter.State, c.AsOf)
	case c.Format == "json":
		err = WriteJSON(stdout, res, c.AsOf)
	case c.Format == "jsonl":
		err = WriteJSONL(stdout, res, c.AsOf)
	default:
		err = WriteText(stdout, res, c.filter.State, Times{AsOf: c.AsOf, Zone: c.Zone})
	}
	if err != nil {
		return fmt.Errorf("write the findings: %w", err)
	}
	if res.Truncated && c.Format != "text" {
		fmt.Fprintf(stderr, "handoff findings: more findings match than --limit %d: narrow the filters or raise --limit\n", c.limit)
	}
	if c.FailOnOpen {
		for i := range res.Findings {
			if res.Findings[i].State == StateOpen {
				return exitcode.Silent(exitcode.NotDelivered)
			}
		}
	}
	return nil
}

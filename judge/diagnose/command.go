// Package diagnose runs `handoff diagnose`: it reads a source of delivery
// events (a file of JSON lines, or one pipeline's stored history in
// ClickHouse), folds them into batches (analyzer/fold) and writes where
// each batch's delivery stopped (analyzer/report), reporting the input it
// rejects and a summary on the way.
package diagnose

import (
	"bufio"
	"context"
	"github.com/handoff-dev/handoff/analyzer/report"
	"io"
	"log/slog"
	"time"

	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// progressEvery is how often diagnose logs its progress while reading.
const progressEvery = 5 * time.Second

// Command is one run of `handoff diagnose` as its flags give it.
type Command struct {
	Source SourceConfig
	// Batch, when set, prints only this batch (pipeline/business_date/
	// batch_id); the others still count for continuity.
	Batch     string
	Contracts *contract.Set
	AsOf      time.Time
	Format    string // text or json
	// Strict stops at the first line that fails validation (exit 2).
	Strict bool
	// Progress logs progress every 5s even when stderr is a terminal.
	Progress bool
	// Terminal says whether stderr is a terminal (no progress log then,
	// unless Progress).
	Terminal bool
	// Zone, when not nil, is the zone the text shows beside UTC instead of
	// each contract's (--tz).
	Zone *time.Location
}

// Run diagnoses the source's batches, writing the diagnoses to stdout and
// rejected lines, progress and the summary to stderr. A batch not
// delivered is exit 1 (nothing more to say: the diagnoses say it).
func (c *Command) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	started := time.Now()
	switch c.Format {
	case "":
		c.Format = "text"
	case "text", "json":
	default:
		return exitcode.Usagef("--format %q: want text or json", c.Format)
	}
	var only model.BatchKey
	if c.Batch != "" {
		k, err := model.ParseBatchKey(c.Batch)
		if err != nil {
			return exitcode.Usagef("--batch: %v", err)
		}
		only = k
	}
	src, err := OpenSource(ctx, c.Source, stdin, only, c.Contracts, c.AsOf)
	if err != nil {
		return err
	}
	sum := &Summary{rejected: map[model.RejectKind]int{}}
	msgs := bufio.NewWriter(stderr)
	defer msgs.Flush()
	var log *slog.Logger
	if c.Progress || !c.Terminal {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	rep := &Reporter{w: msgs, name: src.Name(), strict: c.Strict, log: log, started: started, next: started.Add(progressEvery), sum: sum}
	out := bufio.NewWriterSize(stdout, 1<<20)
	d := &diagnoser{src: src, rep: rep, sum: sum, out: out, contracts: c.Contracts, asOf: c.AsOf, show: report.Options{Zone: c.Zone}}
	if d.base, err = newBaselines(); err != nil {
		return err
	}
	switch {
	case c.Batch != "":
		err = d.one(ctx, only, c.Format)
	case c.Format == "json":
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
		return exitcode.Silent(exitcode.NotDelivered)
	}
	return nil
}

// NewReporter returns a Reporter of the input src rejects, writing to w;
// strict makes the first rejected line a usage error.
func NewReporter(w *bufio.Writer, src Source, strict bool) *Reporter {
	return &Reporter{w: w, name: src.Name(), strict: strict, sum: &Summary{rejected: map[model.RejectKind]int{}}}
}

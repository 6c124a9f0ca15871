package diagnose

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/fold"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/report"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// maxBadShown is how many rejected lines diagnose reports one by one: a
// file of garbage must not flood standard error (200 MB of it once wrote
// 779,000 lines); the rest are counted by reason in the summary.
const maxBadShown = 10

// reporter reports rejected lines and progress while a source is read.
type Reporter struct {
	w       *bufio.Writer
	name    string
	strict  bool
	log     *slog.Logger // nil: no progress
	started time.Time
	next    time.Time
	sum     *Summary
	n       int
	nBad    int // rejected lines so far
}

// bad reports a rejected line: fatal under --strict, else printed and
// counted.
func (r *Reporter) bad(line int, err error) error {
	kind := model.RejectBadJSON
	var ve *model.ValidationError
	if errors.As(err, &ve) && ve.Kind != "" {
		kind = ve.Kind
	}
	r.sum.rejected[kind]++
	if r.strict {
		return exitcode.Usagef("%s:%d: %v", r.name, line, err)
	}
	r.nBad++
	if r.nBad <= maxBadShown {
		fmt.Fprintf(r.w, "%s:%d: %v\n", r.name, line, err)
	}
	return nil
}

// hiddenBad says, in one line, how many rejected lines were not shown.
func (r *Reporter) HiddenBad() {
	if n := r.nBad - maxBadShown; n > 0 {
		fmt.Fprintf(r.w, "%s: %s not shown (the first %d are above; the summary counts all by reason; --strict stops at the first)\n",
			r.name, count(n, "more rejected line"), maxBadShown)
	}
}

// tick logs progress every progressEvery while events are read.
func (r *Reporter) tick(line int) {
	r.n++
	if r.log == nil || r.n&4095 != 0 {
		return
	}
	now := time.Now()
	if now.Before(r.next) {
		return
	}
	r.next = now.Add(progressEvery)
	r.w.Flush()
	secs := now.Sub(r.started).Seconds()
	r.log.Info("reading events", "source", r.name, "lines", line, "events", r.n, "events_per_s", int(float64(r.n)/secs))
}

// summary is what diagnose prints on standard error at the end.
type Summary struct {
	lines, blank, events, heartbeats, batches int
	rejected                                  map[model.RejectKind]int
	status                                    [len(statusOrder)]int
}

var statusOrder = [...]replay.Status{replay.StatusDelivered, replay.StatusInProgress, replay.StatusLate, replay.StatusFailed, replay.StatusBroken}

func statusIndex(s replay.Status) int {
	return max(0, slices.Index(statusOrder[:], s))
}

// count tallies the diagnoses by status.
func (s *Summary) count(ds []replay.Diagnosis) {
	for i := range ds {
		s.status[statusIndex(ds[i].Status)]++
	}
}

// notDelivered returns how many of the diagnosed batches are not delivered.
func (s *Summary) notDelivered() int {
	n := 0
	for i, c := range s.status {
		if statusOrder[i] != replay.StatusDelivered {
			n += c
		}
	}
	return n
}

func (s *Summary) print(w io.Writer, took time.Duration) {
	rejected := 0
	var kinds []string
	for k, n := range s.rejected {
		rejected += n
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	fmt.Fprintf(w, "summary: %s read, %s (%s), %s, %s rejected",
		count(s.lines, "line"), count(s.events, "event"), count(s.heartbeats, "heartbeat"), count(s.batches, "batch"), count(rejected, "line"))
	if len(kinds) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(kinds, ", "))
	}
	fmt.Fprintln(w)
	var st []string
	for i, n := range s.status {
		if n > 0 {
			st = append(st, fmt.Sprintf("%s %d", statusOrder[i], n))
		}
	}
	if len(st) == 0 {
		st = append(st, "no batches")
	}
	rate := 0.0
	if took > 0 {
		rate = float64(s.events) / took.Seconds()
	}
	fmt.Fprintf(w, "summary: by status: %s; %.2fs, %.0f events/s\n", strings.Join(st, ", "), took.Seconds(), rate)
}

// diagnoser wires a source to the fold and the output. The fold
// (analyzer/fold) diagnoses pipelines in parallel pieces and hands them
// over in batch key order; diagnoser only prints them.
type diagnoser struct {
	src       Source
	rep       *Reporter
	sum       *Summary
	out       io.Writer
	contracts *contract.Set
	asOf      time.Time
	show      report.Options // how the text shows times
	// base learns the baselines every diagnosis shows.
	base *baselines
}

// windowLearner is a source that reads the baselines' window apart from
// the range it feeds (ClickHouse); a file's events are all fed anyway.
type windowLearner interface {
	LearnWindow(ctx context.Context, asOf time.Time, learn func(*model.Event)) error
}

// feed reads the source into add, then says how many bad lines it did not
// show.
func (d *diagnoser) feed(ctx context.Context, add func(*model.Event) error) error {
	if w, ok := d.src.(windowLearner); ok && d.base != nil {
		if err := w.LearnWindow(ctx, d.asOf, d.base.learn); err != nil {
			return err
		}
	}
	err := d.src.Feed(ctx, add, d.rep)
	d.rep.HiddenBad()
	return err
}

// foldAll folds the source's events, rendering each piece with render and
// handing it to yield in order.
func foldAll[T any](ctx context.Context, d *diagnoser, render func([]replay.Diagnosis) T, yield func(T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	written := func(p T) error { return writing(yield(p)) }
	sc := d.src.Scope()
	f := fold.New(ctx, batches.Contracts(d.contracts), d.asOf, fold.Options{Grouped: d.src.Grouped(), From: sc.From, To: sc.To, First: sc.FirstOf, Upstreams: sc.Upstreams}, render, written)
	add := f.Add
	if d.base != nil {
		add = d.base.add(add)
	}
	if err := d.feed(ctx, add); err != nil {
		return err
	}
	err := f.Finish()
	d.sum.batches = f.Batches()
	return err
}

// jsonPiece is a piece of the JSON output: one compact diagnosis per line,
// and the status counts of those diagnoses.
type jsonPiece struct {
	json   []byte
	status [len(statusOrder)]int
}

// json writes the diagnosis of every batch as report.JSON does (one JSON
// array, one compact diagnosis per line), in batch key order, as pieces
// come: memory holds a few pieces, never the whole output.
func (d *diagnoser) json(ctx context.Context) error {
	// Each piece is encoded into a reused scratch buffer and copied out at
	// its exact size: growing a fresh buffer per piece cost ~10% more CPU
	// and left up to half of every waiting piece unused.
	var scratch sync.Pool
	render := func(ds []replay.Diagnosis) jsonPiece {
		d.base.annotate(ds)
		var p jsonPiece
		bp, _ := scratch.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		buf := (*bp)[:0]
		for i := range ds {
			p.status[statusIndex(ds[i].Status)]++
			if i > 0 {
				buf = append(buf, ",\n"...)
			}
			buf = ds[i].AppendJSON(buf)
		}
		p.json = bytes.Clone(buf)
		*bp = buf
		scratch.Put(bp)
		return p
	}
	sep := "[\n"
	yield := func(p jsonPiece) error {
		for j, c := range p.status {
			d.sum.status[j] += c
		}
		if _, err := io.WriteString(d.out, sep); err != nil {
			return err
		}
		sep = ",\n"
		_, err := d.out.Write(p.json)
		return err
	}
	if err := foldAll(ctx, d, render, yield); err != nil {
		return err
	}
	end := "\n]\n"
	if sep == "[\n" { // no batch at all
		end = "[]\n"
	}
	_, err := io.WriteString(d.out, end)
	return writing(err)
}

// text writes the text report of every batch; its closing table needs
// them all.
func (d *diagnoser) text(ctx context.Context) error {
	var all []replay.Diagnosis
	keep := func(ds []replay.Diagnosis) []replay.Diagnosis { return ds }
	if err := foldAll(ctx, d, keep, func(ds []replay.Diagnosis) error {
		all = append(all, ds...)
		return nil
	}); err != nil {
		return err
	}
	if d.base != nil {
		d.base.annotate(all)
	}
	d.sum.count(all)
	return writing(d.show.TextAll(d.out, all))
}

// writing says that err, if any, happened while writing the output.
func writing(err error) error {
	if err != nil {
		return fmt.Errorf("writing the diagnoses: %w", err)
	}
	return nil
}

// one writes the diagnosis of batch k alone. Only its pipeline is kept:
// the other batches of the pipeline still count for continuity.
func (d *diagnoser) one(ctx context.Context, k model.BatchKey, format string) error {
	set := batches.New(d.contracts, d.asOf)
	sc := d.src.Scope()
	if first, ok := sc.FirstOf(k.Pipeline); ok {
		set.Known(k.Pipeline, first)
	}
	if !sc.From.IsZero() || !sc.To.IsZero() {
		set.Covers(sc.From, sc.To)
	}
	// The pipelines k waits for count too (the upstream rule): read with
	// the events of a file, read beforehand from ClickHouse.
	keep := map[string]bool{k.Pipeline: true}
	if sc.Upstreams != nil {
		set.Upstreams(sc.Upstreams)
	} else if g := upstream.NewGraph(d.contracts); !g.Empty() {
		for _, p := range g.Needs([]string{k.Pipeline}) {
			keep[p] = true
		}
		set.Upstreams(nil)
	}
	if err := d.feed(ctx, func(e *model.Event) error {
		if keep[e.Pipeline] {
			set.Add(e)
			if d.base != nil {
				d.base.learn(e)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	d.sum.batches = set.Len()
	dg, ok := set.DiagnoseOne(k)
	if !ok {
		return exitcode.Usagef("--batch %s: no events of that batch in %s", k, d.src.Name())
	}
	ds := []replay.Diagnosis{dg}
	if d.base != nil {
		d.base.annotate(ds)
	}
	d.sum.count(ds)
	if format == "json" {
		return writing(report.JSON(d.out, ds))
	}
	return writing(d.show.TextAll(d.out, ds))
}

// count writes n and the word, in the plural unless n is 1.
func count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "ch") {
		return fmt.Sprint(n) + " " + word + "es"
	}
	return fmt.Sprint(n) + " " + word + "s"
}

// Package gen writes deterministic histories of delivery events: batches of
// many pipelines, 10 to 15 events each, with a realistic mix of outcomes
// (mostly delivered; missing signals as in the seed case, transfers that
// never happened, failed jobs and consumers, row mismatches, duplicates,
// batches still in progress), redeliveries, process heartbeats and a few bad
// lines, and (when asked) dates re-run under another batch id.
// deploy/bench/gen is its command; the streaming detector's
// equivalence test (judge/live) generates its history with it.
//
// The same Options always give the same bytes. With only the options the
// command has always had (Events, Seed, Pipelines, End, Bad) the output is
// what it has always been: the other options draw extra random numbers only
// when they are set.
package gen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Schedule is a generated pipeline's schedule, as its contract names it.
type Schedule string

// The schedules the generator knows.
const (
	Daily    Schedule = "daily"    // one batch per date
	Weekdays Schedule = "weekdays" // one batch per Monday-to-Friday date
	Hourly   Schedule = "hourly"   // 24 batches per date, batch id {yyyymmdd}{hh}
)

// Options say what to generate.
type Options struct {
	// Events is the number of lines to write; the history stops at exactly
	// this many. 0 with Days set: no limit, Days business dates.
	Events int
	Seed   uint64
	// Pipelines is the number of pipelines (0: about a year of daily
	// batches for Events).
	Pipelines int
	// End is the last business date (midnight UTC).
	End time.Time
	// Bad is the fraction of lines that are invalid.
	Bad float64
	// Schedules are given to the pipelines in turn (pipeline i gets
	// Schedules[i % len]); empty: every pipeline is daily.
	Schedules []Schedule
	// Days is the number of business dates, ending at End (0: derived
	// from Events).
	Days int
	// NeverProduced is the fraction of the batches the schedules expect
	// that send no event at all (Result.NeverProduced lists them). Only
	// batches at least two days before End are left out, so that every
	// one's first deadline has passed as of End + 2 days.
	NeverProduced float64
	// HeartbeatsAfter, when not zero, gives every pipeline's consumer one
	// more heartbeat, stamped an hour after it, on the last business date:
	// a heartbeat later than an evaluation at HeartbeatsAfter, which no
	// diagnosis as of then may count (nor let hide the earlier ones).
	HeartbeatsAfter time.Time
	// AllKinds adds the breaks and anomalies the default mix lacks
	// (identity_mismatch, checksum_mismatch, orphan_consumption,
	// success_without_artifact, a late delivery, a restored signal) in
	// place of part of the duplicate consumptions.
	AllKinds bool
	// Reruns is the fraction of the batches at least two days before End
	// that are re-run: the first attempt failed, sent nothing, or was
	// delivered with bad files (the consumer loaded other rows), and a
	// re-run delivered the date under another batch id, "{batch_id}-r2"
	// (the contracts' declared re-run) or, for Undeclared of them,
	// "{batch_id}-redo" (an id no contract declares). Result.Reruns and
	// Result.Undeclared list them.
	Reruns     float64
	Undeclared float64
}

// Result says what was generated.
type Result struct {
	Lines, Batches, Pipelines int
	First, Last               time.Time
	// NeverProduced are the keys (pipeline/business_date/batch_id) of the
	// expected batches that got no event, in generation order.
	NeverProduced []string
	// Reruns are the keys of the scheduled batches re-run under a declared
	// id ("…/20260930" for "…/20260930-r2"); Undeclared those re-run under
	// an undeclared one. FirstAttempt says how each first attempt went:
	// "failed", "absent" or "bad_rows", by scheduled key.
	Reruns, Undeclared []string
	FirstAttempt       map[string]string
}

// PipelineName is the name of generated pipeline i with schedule s.
func PipelineName(i int, s Schedule) string {
	if s == "" {
		s = Daily
	}
	return fmt.Sprintf("pipeline-%03d.%s", i, s)
}

// Write writes the history o describes to w as JSON lines.
func Write(w io.Writer, o Options) (Result, error) {
	last := o.End
	p := o.Pipelines
	if p <= 0 {
		p = max(1, int(float64(o.Events)/12.5/365+0.5))
	}
	g := &gen{
		rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		bw:  bufio.NewWriterSize(w, 1<<20),
		n:   o.Events, pipelines: p, bad: o.Bad, o: o,
	}
	if g.n <= 0 {
		g.n = int(^uint(0) >> 1)
	}
	// A batch averages about 12 lines (heartbeats included). Start early
	// enough to end near End; the file stops at exactly Events lines,
	// running past End if it must.
	days := o.Days
	if days <= 0 {
		days = int(float64(o.Events)/(12.0*float64(p))) + 1
	}
	first := last.AddDate(0, 0, -(days - 1))
	for d := first; g.written < g.n && (o.Days <= 0 || !d.After(last)); d = d.AddDate(0, 0, 1) {
		g.day(d, last)
	}
	if err := g.bw.Flush(); err != nil {
		return Result{}, fmt.Errorf("gen: write: %w", err)
	}
	return Result{Lines: g.written, Batches: g.batches, Pipelines: p, First: first, Last: g.lastDate, NeverProduced: g.never,
		Reruns: g.reruns, Undeclared: g.undeclared, FirstAttempt: g.firstAttempt}, nil
}

// Schedule returns the schedule of pipeline i under o.
func (o Options) Schedule(i int) Schedule {
	if len(o.Schedules) == 0 {
		return Daily
	}
	return o.Schedules[i%len(o.Schedules)]
}

type event struct {
	ms   int64
	line []byte
}

type gen struct {
	o         Options
	rng       *rand.Rand
	bw        *bufio.Writer
	n         int
	written   int
	batches   int
	pipelines int
	bad       float64
	lastDate  time.Time
	day_      []event
	never     []string

	reruns, undeclared []string
	firstAttempt       map[string]string
}

// day writes the events of every pipeline's batches of business date d, in
// time order across pipelines as a collector would see them.
func (g *gen) day(d, last time.Time) {
	g.day_ = g.day_[:0]
	recent := last.Sub(d) < 48*time.Hour && !d.After(last) // in progress as of last+2d
	for p := range g.pipelines {
		switch g.o.Schedule(p) {
		case Weekdays:
			if wd := d.Weekday(); wd == time.Saturday || wd == time.Sunday {
				continue
			}
			g.batch(p, d, -1, recent, last)
		case Hourly:
			for hh := range 24 {
				g.batch(p, d, hh, recent, last)
			}
		default:
			g.batch(p, d, -1, recent, last)
		}
	}
	if !g.o.HeartbeatsAfter.IsZero() && d.Equal(last) {
		hb := g.o.HeartbeatsAfter.Add(time.Hour).UTC()
		for p := range g.pipelines {
			pipe := PipelineName(p, g.o.Schedule(p))
			g.day_ = append(g.day_, event{ms: hb.UnixMilli(), line: g.heartbeat(fmt.Sprintf("hb-%s-after", pipe), pipe, fmt.Sprintf("consume-runner-%d", p%5), hb)})
		}
	}
	slices.SortStableFunc(g.day_, func(a, b event) int { return int(a.ms - b.ms) })
	for _, e := range g.day_ {
		if g.written >= g.n {
			return
		}
		if g.rng.Float64() < g.bad {
			e.line = g.corrupt(e.line)
		}
		g.bw.Write(e.line)
		g.bw.WriteByte('\n')
		g.written++
	}
	g.lastDate = d
}

// corrupt returns a bad version of a line: broken JSON, a bad date or an
// unknown type.
func (g *gen) corrupt(l []byte) []byte {
	switch g.rng.IntN(3) {
	case 0:
		return l[:len(l)/2]
	case 1:
		return []byte(`{"spec":"handoff/v1","event_id":"bad-` + strconv.Itoa(g.written) + `","type":"job.started","time":"2026-09-29T17:00:00Z","pipeline":"pipeline-000.daily","business_date":"2026-13-01","batch_id":"20261301","system":"producer"}`)
	default:
		return []byte(`{"spec":"handoff/v1","event_id":"bad-` + strconv.Itoa(g.written) + `","type":"job.exploded","time":"2026-09-29T17:00:00Z","pipeline":"pipeline-000.daily","business_date":"2026-09-29","batch_id":"20260929","system":"producer"}`)
	}
}

type ev struct {
	typ, system, component, object, checksum, errText string
	rows, bytes, attempt                              int64
}

// batch generates one batch's events: the batch of date d, or of hour hh
// of d when hh >= 0 (hourly schedules).
func (g *gen) batch(p int, d time.Time, hh int, recent bool, last time.Time) {
	r := g.rng
	s := g.o.Schedule(p)
	pipe := PipelineName(p, s)
	date := d.Format("2006-01-02")
	id := d.Format("20060102")
	if hh >= 0 {
		id += fmt.Sprintf("%02d", hh)
	}
	g.batches++
	if g.o.NeverProduced > 0 && r.Float64() < g.o.NeverProduced && last.Sub(d) >= 48*time.Hour {
		g.never = append(g.never, pipe+"/"+date+"/"+id)
		return
	}
	if g.o.Reruns > 0 && last.Sub(d) >= 48*time.Hour && r.Float64() < g.o.Reruns {
		g.rerun(p, pipe, d, date, id, hh)
		return
	}
	base := fmt.Sprintf("pipeline_%03d_%s", p, id)
	csv, flag := base+".csv", base+".flag"
	rows := int64(1000 + r.IntN(1_000_000))
	size := rows*80 + int64(r.IntN(1000))
	sum := fmt.Sprintf("sha256:%016x", r.Uint64())
	producer := fmt.Sprintf("build-runner-%d", p%7)
	relay := fmt.Sprintf("sftp-relay-%d", p%3)
	consumer := fmt.Sprintf("consume-runner-%d", p%5)

	// Stop after how many steps of the happy path, and how it goes wrong.
	var steps []ev
	add := func(e ev) { steps = append(steps, e) }
	var start time.Time
	step := 300_000 // ms: up to 5 minutes between events
	if hh >= 0 {
		start = d.Add(time.Duration(hh)*time.Hour + 2*time.Minute + time.Duration(r.IntN(600))*time.Second)
		step = 60_000
	} else {
		start = d.Add(24*time.Hour + 30*time.Minute + time.Duration(r.IntN(3600))*time.Second)
	}
	t := start
	seq := 0
	// delay, when set, makes the next event that many hours late.
	delay := 0
	emit := func(e ev) {
		t = t.Add(time.Duration(1+r.IntN(step)) * time.Millisecond)
		if delay > 0 && seq == 5 { // the transfer
			t = t.Add(time.Duration(delay) * time.Hour)
		}
		seq++
		g.day_ = append(g.day_, event{ms: t.UnixMilli(), line: g.encode(fmt.Sprintf("%s-%s-%02d", pipe, id, seq), pipe, date, id, t, e)})
	}

	happy := []ev{
		{typ: "job.started", system: "producer", component: producer, attempt: 1},
		{typ: "artifact.staged", system: "producer", component: producer, object: csv + ".tmp"},
		{typ: "artifact.finalized", system: "producer", component: producer, object: csv, rows: rows, bytes: size, checksum: sum},
		{typ: "job.succeeded", system: "producer", component: producer, attempt: 1},
		{typ: "signal.published", system: "producer", component: producer, object: flag, rows: rows, checksum: sum},
		{typ: "artifact.transferred", system: "exchange", component: relay, object: csv, rows: rows, bytes: size, checksum: sum},
		{typ: "signal.transferred", system: "exchange", component: relay, object: flag, rows: rows},
		{typ: "batch.identified", system: "consumer", component: consumer, object: csv, rows: rows},
		{typ: "consume.started", system: "consumer", component: consumer, attempt: 1},
		{typ: "consume.succeeded", system: "consumer", component: consumer, rows: rows, attempt: 1},
	}
	extras := r.IntN(6) // 10 to 15 events
	x := r.Float64()
	switch {
	case recent && x < 0.5:
		// Still on its way: stops somewhere along the ladder.
		steps = happy[:1+r.IntN(len(happy)-1)]
	case x < 0.80:
		steps = happy
	case x < 0.85: // the seed case: the flag never reached the receiver
		steps = append(steps, happy[:6]...)
	case x < 0.88: // never transferred
		steps = append(steps, happy[:5]...)
	case x < 0.91: // the job failed twice
		add(happy[0])
		add(ev{typ: "job.failed", system: "producer", component: producer, attempt: 1, errText: "exit status 1"})
		add(ev{typ: "job.started", system: "producer", component: producer, attempt: 2})
		add(ev{typ: "job.failed", system: "producer", component: producer, attempt: 2, errText: "OOMKilled"})
	case x < 0.93: // the consumer loaded fewer rows
		steps = append(steps, happy...)
		steps[9].rows = rows - int64(1+r.IntN(100))
	case x < 0.96: // the consumer fails
		steps = append(steps, happy[:9]...)
		add(ev{typ: "consume.failed", system: "consumer", component: consumer, attempt: 1, errText: "connection reset"})
	case x < 0.98: // the signal was published before the file was final
		steps = append(steps, happy[0], happy[1], happy[4], happy[2], happy[3])
		steps = append(steps, happy[5:]...)
	case g.o.AllKinds && x < 0.99:
		steps, delay = g.rarer(happy, consumer, csv)
	default: // a late delivery, consumed twice
		steps = append(steps, happy...)
		add(ev{typ: "consume.succeeded", system: "consumer", component: consumer, rows: rows, attempt: 2})
	}
	for _, e := range steps {
		emit(e)
	}
	// Extras: retries of context events, duplicates (same event_id, a
	// redelivery) and heartbeats.
	for range extras {
		switch r.IntN(3) {
		case 0:
			if len(g.day_) > 0 {
				// A duplicate delivery of one of this batch's events.
				k := len(g.day_) - 1 - r.IntN(min(len(steps), len(g.day_)))
				g.day_ = append(g.day_, g.day_[k])
				continue
			}
			fallthrough
		case 1:
			t0 := t
			t = start.Add(-time.Duration(1+r.IntN(600)) * time.Second)
			seq++
			g.day_ = append(g.day_, event{ms: t.UnixMilli(), line: g.encode(fmt.Sprintf("%s-%s-%02d", pipe, id, seq), pipe, date, id, t,
				ev{typ: "artifact.staged", system: "producer", component: producer, object: csv + ".tmp"})})
			t = t0
		default:
			hb := start.Add(time.Duration(r.IntN(86400)) * time.Second)
			g.day_ = append(g.day_, event{ms: hb.UnixMilli(), line: g.heartbeat(fmt.Sprintf("hb-%s-%s-%d", pipe, id, r.IntN(1<<30)), pipe, consumer, hb)})
		}
	}
}

// rerun writes a date that took two attempts: a first one under the
// scheduled id that failed, sent nothing or was delivered with bad rows,
// and a delivered re-run under a declared ("-r2") or undeclared ("-redo")
// id, with the date's file names, a few hours later (minutes, for an
// hourly batch).
func (g *gen) rerun(p int, pipe string, d time.Time, date, id string, hh int) {
	r := g.rng
	key := pipe + "/" + date + "/" + id
	modes := [...]string{"failed", "absent", "bad_rows"}
	mode := modes[r.IntN(len(modes))]
	suffix := "-r2"
	if r.Float64() < g.o.Undeclared {
		suffix = "-redo"
		g.undeclared = append(g.undeclared, key)
	} else {
		g.reruns = append(g.reruns, key)
	}
	if g.firstAttempt == nil {
		g.firstAttempt = map[string]string{}
	}
	g.firstAttempt[key] = mode
	base := fmt.Sprintf("pipeline_%03d_%s", p, id)
	rows := int64(1000 + r.IntN(1_000_000))
	size := rows * 80
	sum := fmt.Sprintf("sha256:%016x", r.Uint64())
	producer, relay, consumer := fmt.Sprintf("build-runner-%d", p%7), fmt.Sprintf("sftp-relay-%d", p%3), fmt.Sprintf("consume-runner-%d", p%5)
	happy := []ev{
		{typ: "job.started", system: "producer", component: producer, attempt: 1},
		{typ: "artifact.staged", system: "producer", component: producer, object: base + ".csv.tmp"},
		{typ: "artifact.finalized", system: "producer", component: producer, object: base + ".csv", rows: rows, bytes: size, checksum: sum},
		{typ: "job.succeeded", system: "producer", component: producer, attempt: 1},
		{typ: "signal.published", system: "producer", component: producer, object: base + ".flag", rows: rows, checksum: sum},
		{typ: "artifact.transferred", system: "exchange", component: relay, object: base + ".csv", rows: rows, bytes: size, checksum: sum},
		{typ: "signal.transferred", system: "exchange", component: relay, object: base + ".flag", rows: rows},
		{typ: "batch.identified", system: "consumer", component: consumer, object: base + ".csv", rows: rows},
		{typ: "consume.started", system: "consumer", component: consumer, attempt: 1},
		{typ: "consume.succeeded", system: "consumer", component: consumer, rows: rows, attempt: 1},
	}
	start, gap, step := d.Add(24*time.Hour+30*time.Minute+time.Duration(r.IntN(3600))*time.Second), 3*time.Hour, 60_000
	if hh >= 0 {
		start, gap, step = d.Add(time.Duration(hh)*time.Hour+2*time.Minute+time.Duration(r.IntN(300))*time.Second), 15*time.Minute, 20_000
	}
	write := func(batch string, t time.Time, steps []ev) {
		for i, e := range steps {
			t = t.Add(time.Duration(1+r.IntN(step)) * time.Millisecond)
			g.day_ = append(g.day_, event{ms: t.UnixMilli(), line: g.encode(fmt.Sprintf("%s-%s-%02d", pipe, batch, i+1), pipe, date, batch, t, e)})
		}
	}
	switch mode {
	case "failed":
		write(id, start, []ev{happy[0], {typ: "job.failed", system: "producer", component: producer, attempt: 1, errText: "exit status 1"}})
	case "bad_rows":
		bad := slices.Clone(happy)
		bad[9].rows = rows - int64(1+r.IntN(100))
		write(id, start, bad)
	}
	write(id+suffix, start.Add(gap), happy)
}

// rarer picks one of the outcomes only AllKinds generates: the steps of the
// batch and, for a late delivery, how many hours late its transfer is.
func (g *gen) rarer(happy []ev, consumer, csv string) ([]ev, int) {
	steps := slices.Clone(happy)
	switch g.rng.IntN(6) {
	case 0: // identity_mismatch: the receiver got another date's file
		steps[5].object = "wrong_" + csv
	case 1: // checksum_mismatch: the file changed on its way
		steps[5].checksum = "sha256:ffffffffffffffff"
	case 2: // orphan_consumption: consumed, and no upstream evidence at all
		return []ev{happy[8], happy[9]}, 0
	case 3: // success_without_artifact: SUCCESS, and no final file
		return []ev{happy[0], happy[1], happy[3]}, 0
	case 4: // a late delivery: the transfer came hours after its deadline
		return steps, 12
	default: // the seed case fixed: the signal restored by an operator
		steps[6].typ, steps[6].system, steps[6].component = "signal.restored", "operator", "handoff-restore"
	}
	return steps, 0
}

func (g *gen) encode(eventID, pipe, date, batch string, t time.Time, e ev) []byte {
	b := make([]byte, 0, 400)
	b = append(b, `{"spec":"handoff/v1","event_id":`...)
	b = strconv.AppendQuote(b, eventID)
	b = append(b, `,"type":`...)
	b = strconv.AppendQuote(b, e.typ)
	b = append(b, `,"time":"`...)
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, `","pipeline":`...)
	b = strconv.AppendQuote(b, pipe)
	b = append(b, `,"business_date":"`...)
	b = append(b, date...)
	b = append(b, `","batch_id":"`...)
	b = append(b, batch...)
	b = append(b, `","system":"`...)
	b = append(b, e.system...)
	b = append(b, `","component":`...)
	b = strconv.AppendQuote(b, e.component)
	if e.object != "" {
		b = append(b, `,"object":`...)
		b = strconv.AppendQuote(b, e.object)
	}
	if e.rows != 0 {
		b = append(b, `,"rows":`...)
		b = strconv.AppendInt(b, e.rows, 10)
	}
	if e.bytes != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, e.bytes, 10)
	}
	if e.checksum != "" {
		b = append(b, `,"checksum":`...)
		b = strconv.AppendQuote(b, e.checksum)
	}
	if e.attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, e.attempt, 10)
	}
	if e.errText != "" {
		b = append(b, `,"error":`...)
		b = strconv.AppendQuote(b, e.errText)
	}
	if e.system == "exchange" {
		b = append(b, `,"attrs":{"location":"/inbox/finance"}`...)
	}
	return append(b, '}')
}

func (g *gen) heartbeat(eventID, pipe, component string, t time.Time) []byte {
	b := make([]byte, 0, 200)
	b = append(b, `{"spec":"handoff/v1","event_id":`...)
	b = strconv.AppendQuote(b, eventID)
	b = append(b, `,"type":"process.heartbeat","time":"`...)
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, `","pipeline":`...)
	b = strconv.AppendQuote(b, pipe)
	b = append(b, `,"system":"consumer","component":`...)
	b = strconv.AppendQuote(b, component)
	return append(b, '}')
}

// WriteContracts writes one contract per pipeline of o into dir, with name
// templates so that identity checks and continuity run too. Daily and
// weekday batches are due the next day (produced by 06:00, consumed by
// 12:00 UTC); hourly ones within their hour's next three.
func WriteContracts(dir string, o Options, pipelines int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gen: contracts directory: %w", err)
	}
	for p := range pipelines {
		s := o.Schedule(p)
		name := PipelineName(p, s)
		batchID, deadlines := `"{yyyymmdd}"`, "  produced: \"business_date + 1d 06:00\"\n  consumed: \"business_date + 1d 12:00\"\n"
		if s == Hourly {
			batchID, deadlines = `"{yyyymmdd}{hh}"`, "  produced: \"start + 30m\"\n  consumed: \"start + 3h\"\n"
		}
		body := fmt.Sprintf(`# Generated by deploy/bench/gen.
pipeline: %s
schedule: %s
timezone: UTC
batch_id: %s
artifact: "pipeline_%03d_{batch_id}.csv"
signal: "pipeline_%03d_{batch_id}.flag"
required: [produced, finalized, signaled, transferred, signal_delivered, identified, consumed]
deadlines:
%srows:
  min: 1
  equal: true
`, name, s, batchID, p, p, deadlines)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(body), 0o644); err != nil {
			return fmt.Errorf("gen: contract of %s: %w", name, err)
		}
	}
	return nil
}

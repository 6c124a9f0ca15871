// Command gen writes a deterministic JSON-lines file of delivery events for
// benchmarking `handoff diagnose`: daily batches of many pipelines, 10 to 15
// events each, with a realistic mix of outcomes (mostly delivered; missing
// signals as in the seed case, transfers that never happened, failed jobs
// and consumers, row mismatches, duplicates, batches still in progress),
// process heartbeats, and a few bad lines.
//
//	go run ./deploy/bench/gen -events 1000000 -seed 1 -out .data/bench/events.jsonl -contracts .data/bench/contracts
//
// The same flags always give the same bytes. The last business date is
// -end; diagnose it as of two days later (for -end 2026-09-30:
// --as-of 2026-10-03T00:00:00Z) so that the last two days read in_progress
// or late and the rest have settled.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

func main() {
	var (
		events    = flag.Int("events", 1_000_000, "number of lines to write")
		seed      = flag.Uint64("seed", 1, "random seed")
		out       = flag.String("out", "-", "output file, - for stdout")
		pipelines = flag.Int("pipelines", 0, "number of pipelines (0: about a year of daily batches)")
		end       = flag.String("end", "2026-09-30", "last business date")
		badRate   = flag.Float64("bad", 0.001, "fraction of lines that are invalid")
		contracts = flag.String("contracts", "", "if set, write a daily contract per pipeline into this directory")
	)
	flag.Parse()
	last, err := time.Parse("2006-01-02", *end)
	if err != nil {
		fatal(fmt.Errorf("-end: %w", err))
	}
	p := *pipelines
	if p <= 0 {
		p = max(1, int(float64(*events)/12.5/365+0.5))
	}
	w := os.Stdout
	if *out != "-" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			fatal(err)
		}
		f, err := os.Create(*out)
		if err != nil {
			fatal(err)
		}
		defer f.Close()
		w = f
	}
	g := &gen{
		rng: rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15)),
		bw:  bufio.NewWriterSize(w, 1<<20),
		n:   *events, pipelines: p, bad: *badRate,
	}
	// A batch averages about 12 lines (heartbeats included). Start early
	// enough to end near -end; the file stops at exactly -events lines,
	// running past -end if it must.
	days := int(float64(*events)/(12.0*float64(p))) + 1
	first := last.AddDate(0, 0, -(days - 1))
	for d := first; g.written < g.n; d = d.AddDate(0, 0, 1) {
		g.day(d, last)
	}
	if err := g.bw.Flush(); err != nil {
		fatal(err)
	}
	if *out != "-" {
		if err := w.Close(); err != nil {
			fatal(err)
		}
	}
	if *contracts != "" {
		if err := writeContracts(*contracts, p); err != nil {
			fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "gen: %d lines, %d batches, %d pipelines, business dates %s..%s\n",
		g.written, g.batches, p, first.Format("2006-01-02"), g.lastDate.Format("2006-01-02"))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

type event struct {
	ms   int64
	line []byte
}

type gen struct {
	rng       *rand.Rand
	bw        *bufio.Writer
	n         int
	written   int
	batches   int
	pipelines int
	bad       float64
	lastDate  time.Time
	day_      []event
}

func pipelineName(i int) string { return fmt.Sprintf("pipeline-%03d.daily", i) }

// day writes the events of every pipeline's batch of business date d, in
// time order across pipelines as a collector would see them.
func (g *gen) day(d, last time.Time) {
	g.day_ = g.day_[:0]
	recent := last.Sub(d) < 48*time.Hour && !d.After(last) // in progress as of last+2d
	for p := range g.pipelines {
		g.batch(p, d, recent)
		g.batches++
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

// batch generates one batch's events.
func (g *gen) batch(p int, d time.Time, recent bool) {
	r := g.rng
	pipe := pipelineName(p)
	date := d.Format("2006-01-02")
	id := d.Format("20060102")
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
	start := d.Add(24*time.Hour + 30*time.Minute + time.Duration(r.IntN(3600))*time.Second)
	t := start
	seq := 0
	emit := func(e ev) {
		t = t.Add(time.Duration(1+r.IntN(300_000)) * time.Millisecond)
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

// writeContracts writes one daily contract per pipeline, with name
// templates so that identity checks and continuity run too.
func writeContracts(dir string, pipelines int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p := range pipelines {
		name := pipelineName(p)
		body := fmt.Sprintf(`# Generated by deploy/bench/gen.
pipeline: %s
schedule: daily
timezone: UTC
batch_id: "{yyyymmdd}"
artifact: "pipeline_%03d_{batch_id}.csv"
signal: "pipeline_%03d_{batch_id}.flag"
required: [produced, finalized, signaled, transferred, signal_delivered, identified, consumed]
deadlines:
  produced: "business_date + 1d 06:00"
  consumed: "business_date + 1d 12:00"
rows:
  min: 1
  equal: true
`, name, p, p)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

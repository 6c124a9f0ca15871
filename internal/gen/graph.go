package gen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// GraphOptions say what delivery graph to generate (docs/incidents.md):
// Pipelines daily pipelines in Levels levels, each pipeline past the first
// level waiting for one or two of the level before (and now and then one
// two levels up, so that chains cross), Days healthy business dates, and
// on the last of them three root breaks of different kinds.
type GraphOptions struct {
	Pipelines int // at least 3 * Levels
	Levels    int // at least 3
	Days      int // at least 2: the break date and the healthy ones before it
	// Date is the break date (midnight UTC).
	Date time.Time
	Seed uint64
	// Prefix starts every pipeline name ("graph" when empty), so that
	// tests sharing one Alertmanager tell their pipelines apart.
	Prefix string
}

// Graph is a generated delivery graph: its contracts, its events until the
// moment the breaks are seen, the late deliveries that end them, and what
// every surface must conclude of the break date.
type Graph struct {
	// Contracts maps a file name to its YAML.
	Contracts map[string]string
	// Pipelines lists the pipelines, level by level.
	Pipelines []string
	// Roots are the three broken batches: missing (no event at all),
	// stopped (its signal never reached the receiver: not_identified) and
	// failed (its job failed; its deadlines are a day later than the
	// others', so it has failed and is not yet overdue).
	Roots map[string]string // batch key -> kind: missing, stopped, failed
	// Blocked maps every batch of the break date that waits on a root
	// (directly or through others) to its roots, sorted.
	Blocked map[string][]string
	// Events are the JSON lines up to the moment the breaks are seen
	// (SeenAt); Late the lines that deliver the roots and then every
	// blocked batch, late, in time order (DeliveredAt is after the last).
	Events, Late        []string
	SeenAt, DeliveredAt time.Time
}

// Kinds of root break.
const (
	RootMissing = "missing"
	RootStopped = "stopped"
	RootFailed  = "failed"
)

// GenerateGraph generates the graph o describes. The same options give the
// same graph.
func GenerateGraph(o GraphOptions) (*Graph, error) {
	if o.Levels < 3 || o.Pipelines < 3*o.Levels || o.Days < 2 {
		return nil, fmt.Errorf("gen: graph of %d pipelines in %d levels over %d days: want at least 3 levels, 3 pipelines per level and 2 days", o.Pipelines, o.Levels, o.Days)
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	g := &Graph{Contracts: map[string]string{}, Roots: map[string]string{}, Blocked: map[string][]string{}}
	if o.Prefix == "" {
		o.Prefix = "graph"
	}
	levels := make([][]string, o.Levels)
	ups := map[string][]string{}
	for i := range o.Pipelines {
		l := i * o.Levels / o.Pipelines
		name := fmt.Sprintf("%s-l%d-%03d.daily", o.Prefix, l, i)
		levels[l] = append(levels[l], name)
		g.Pipelines = append(g.Pipelines, name)
		if l == 0 {
			continue
		}
		prev := levels[l-1]
		u := []string{prev[rng.IntN(len(prev))]}
		if j := len(levels[l]) - 1; l == 1 && j < 3 {
			// Each root break has a blast radius.
			u[0] = prev[j]
		}
		if rng.IntN(2) == 0 {
			if v := prev[rng.IntN(len(prev))]; v != u[0] {
				u = append(u, v)
			}
		}
		if l >= 2 && rng.IntN(4) == 0 {
			u = append(u, levels[l-2][rng.IntN(len(levels[l-2]))])
		}
		slices.Sort(u)
		ups[name] = slices.Compact(u)
	}
	roots := levels[0][:3]
	kinds := []string{RootMissing, RootStopped, RootFailed}
	rootKind := map[string]string{}
	for i, p := range roots {
		rootKind[p] = kinds[i]
	}
	for _, p := range g.Pipelines {
		g.Contracts[p+".yaml"] = graphContract(p, ups[p], rootKind[p] == RootFailed)
	}
	day := o.Date.UTC().Truncate(24 * time.Hour)
	id := func(d time.Time) string { return d.Format("20060102") }
	key := func(p string, d time.Time) string { return p + "/" + d.Format("2006-01-02") + "/" + id(d) }
	// The roots of each pipeline on the break date (nil: healthy).
	rootsOf := map[string][]string{}
	for _, p := range g.Pipelines { // level order: upstreams first
		if k, ok := rootKind[p]; ok {
			g.Roots[key(p, day)] = k
			continue
		}
		var rs []string
		for _, u := range ups[p] {
			if _, ok := rootKind[u]; ok {
				rs = append(rs, key(u, day))
			}
			rs = append(rs, rootsOf[u]...)
		}
		if len(rs) > 0 {
			sort.Strings(rs)
			rootsOf[p] = slices.Compact(rs)
			g.Blocked[key(p, day)] = rootsOf[p]
		}
	}
	w := &graphWriter{}
	levelOf := map[string]int{}
	for l, ps := range levels {
		for _, p := range ps {
			levelOf[p] = l
		}
	}
	// Healthy dates: every pipeline delivers, level by level, from 00:30
	// of the next day, ten minutes a level.
	for n := o.Days - 1; n >= 0; n-- {
		d := day.AddDate(0, 0, -n)
		for _, p := range g.Pipelines {
			if n == 0 && (rootKind[p] != "" || rootsOf[p] != nil) {
				continue
			}
			w.batch(p, d, d.Add(24*time.Hour+30*time.Minute+time.Duration(levelOf[p])*10*time.Minute), "", false)
		}
	}
	// The breaks.
	for _, p := range roots {
		start := day.Add(24*time.Hour + 30*time.Minute)
		switch rootKind[p] {
		case RootStopped:
			w.batch(p, day, start, "", true)
		case RootFailed:
			w.failed(p, day, start)
		}
	}
	g.Events = w.done()
	g.SeenAt = day.Add(24*time.Hour + 13*time.Hour)
	// The late deliveries: the roots from 14:00, then level by level.
	late := day.Add(24*time.Hour + 14*time.Hour)
	for _, p := range roots {
		switch rootKind[p] {
		case RootMissing:
			w.batch(p, day, late, "", false)
		case RootStopped:
			w.batch(p, day, late, "rest", false)
		case RootFailed:
			w.batch(p, day, late, "retry", false)
		}
	}
	for _, p := range g.Pipelines {
		if rootsOf[p] != nil {
			w.batch(p, day, late.Add(time.Duration(levelOf[p])*10*time.Minute), "", false)
		}
	}
	g.Late = w.done()
	g.DeliveredAt = late.Add(time.Duration(o.Levels+1) * 10 * time.Minute)
	return g, nil
}

func graphContract(p string, ups []string, later bool) string {
	day := "1d"
	if later {
		day = "2d"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by internal/gen (GenerateGraph).\npipeline: %s\nschedule: daily\ntimezone: UTC\nbatch_id: \"{yyyymmdd}\"\n", p)
	fmt.Fprintf(&b, "artifact: \"%s_{batch_id}.csv\"\nsignal: \"%s_{batch_id}.flag\"\n", slug(p), slug(p))
	b.WriteString("required: [produced, finalized, signaled, transferred, signal_delivered, identified, consumed]\n")
	fmt.Fprintf(&b, "deadlines:\n  produced: \"business_date + %[1]s 06:00\"\n  signal_delivered: \"business_date + %[1]s 09:00\"\n  consumed: \"business_date + %[1]s 12:00\"\n", day)
	if len(ups) > 0 {
		b.WriteString("upstreams:\n")
		for _, u := range ups {
			fmt.Fprintf(&b, "  - %s\n", u)
		}
	}
	return b.String()
}

func slug(p string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(p) }

// graphWriter collects JSON lines in time order.
type graphWriter struct{ lines []event }

func (w *graphWriter) done() []string {
	sort.SliceStable(w.lines, func(i, j int) bool { return w.lines[i].ms < w.lines[j].ms })
	out := make([]string, len(w.lines))
	for i, e := range w.lines {
		out[i] = string(e.line)
	}
	w.lines = nil
	return out
}

// batch writes p's batch of d from start: the whole ladder; with stop, up
// to the transfer of the data file (the signal never reaches the
// receiver); part "rest" is what such a batch lacks, "retry" a second
// attempt after a failed one.
func (w *graphWriter) batch(p string, d, start time.Time, part string, stop bool) {
	date, id := d.Format("2006-01-02"), d.Format("20060102")
	csv, flag := slug(p)+"_"+id+".csv", slug(p)+"_"+id+".flag"
	const rows = 1000
	sum := fmt.Sprintf("sha256:%016x", uint64(len(p))*0x9e3779b97f4a7c15^uint64(d.Unix()))
	attempt := int64(1)
	if part == "retry" {
		attempt = 2
	}
	evs := []ev{
		{typ: "job.started", system: "producer", component: "build-" + p, attempt: attempt},
		{typ: "artifact.finalized", system: "producer", component: "build-" + p, object: csv, rows: rows, bytes: rows * 80, checksum: sum},
		{typ: "job.succeeded", system: "producer", component: "build-" + p, attempt: attempt},
		{typ: "signal.published", system: "producer", component: "build-" + p, object: flag, rows: rows, checksum: sum},
		{typ: "artifact.transferred", system: "exchange", component: "relay", object: csv, rows: rows, bytes: rows * 80, checksum: sum},
		{typ: "signal.transferred", system: "exchange", component: "relay", object: flag, rows: rows},
		{typ: "batch.identified", system: "consumer", component: "load-" + p, object: csv, rows: rows},
		{typ: "consume.succeeded", system: "consumer", component: "load-" + p, rows: rows, attempt: 1},
	}
	from, to := 0, len(evs)
	switch {
	case stop:
		to = 5
	case part == "rest":
		from = 5
	}
	var g gen
	for i := from; i < to; i++ {
		t := start.Add(time.Duration(i) * 30 * time.Second)
		eid := fmt.Sprintf("%s-%s-%s%02d", p, id, part, i+1)
		w.lines = append(w.lines, event{ms: t.UnixMilli(), line: g.encode(eid, p, date, id, t, evs[i])})
	}
}

// failed writes p's batch of d whose job failed.
func (w *graphWriter) failed(p string, d, start time.Time) {
	date, id := d.Format("2006-01-02"), d.Format("20060102")
	var g gen
	for i, e := range []ev{
		{typ: "job.started", system: "producer", component: "build-" + p, attempt: 1},
		{typ: "job.failed", system: "producer", component: "build-" + p, attempt: 1, errText: "source database unreachable"},
	} {
		t := start.Add(time.Duration(i) * time.Minute)
		w.lines = append(w.lines, event{ms: t.UnixMilli(), line: g.encode(fmt.Sprintf("%s-%s-fail%02d", p, id, i+1), p, date, id, t, e)})
	}
}

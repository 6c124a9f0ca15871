// Command serve is the benchmark of `handoff serve` (deploy/bench/serve.sh):
// it loads a year of history for many daily pipelines into a private
// ClickHouse database (unless the database already holds it), serves it
// with query/serve on loopback, and measures the latency of the pages and
// API calls of docs/performance.md's targets, one request at a time:
//
//	batch   GET /api/v1/batches/{pipeline}/{date}/{id} of random batches
//	month   GET /?pipeline=P&from=M-01&to=M-30 (the grid, one pipeline-month)
//	day     GET /?from=D&to=D (the grid of every pipeline for one day)
//
// No batch has a stored diagnosis (diagnoses_v2 is empty), so every status
// on every page is diagnosed on read from the events: the worst case.
//
//	go run ./deploy/bench/serve -db handoff_bench_serve -pipelines 1000 -days 365 -n 200
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/serve"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

func main() {
	var (
		addr      = flag.String("clickhouse-addr", os.Getenv("HANDOFF_CLICKHOUSE_ADDR"), "ClickHouse native host:port (HANDOFF_CLICKHOUSE_ADDR)")
		db        = flag.String("db", "handoff_bench_serve", "private database to load and read")
		pipelines = flag.Int("pipelines", 1000, "daily pipelines")
		days      = flag.Int("days", 365, "business days per pipeline, ending -last")
		last      = flag.String("last", "2026-09-30", "last business date")
		n         = flag.Int("n", 200, "requests per measured kind")
		drop      = flag.Bool("drop", false, "drop the database at the end")
		only      = flag.String("only", "", "measure only this kind (batch, month or day)")
		cpuprof   = flag.String("cpuprofile", "", "write a CPU profile of the measured requests to this file")
		memprof   = flag.String("memprofile", "", "write a profile of the allocations of the run to this file")
		logQ      = flag.Bool("log-queries", false, "log the queries in ClickHouse's system.query_log and print, per kind, each statement's count, duration and rows")
	)
	flag.Parse()
	onlyKind, logQueries = *only, *logQ
	// The collector settings `handoff serve` applies (cmd/handoff/gc.go).
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(768 << 20)
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench serve:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *memprof != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if f, err := os.Create(*memprof); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	if err := run(*addr, *db, *pipelines, *days, *last, *n, *drop); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench serve:", err)
		os.Exit(1)
	}
}

// onlyKind, when set, is the one kind measured (-only); logQueries
// prints where ClickHouse's share of each kind's time went (-log-queries).
var (
	onlyKind   string
	logQueries bool
)

func run(addr, db string, pipelines, days int, lastS string, n int, drop bool) error {
	ctx := context.Background()
	last, err := model.ParseDate(lastS)
	if err != nil {
		return fmt.Errorf("-last: %w", err)
	}
	cfg := chconn.Config{Addr: addr}
	if logQueries {
		cfg.Settings = map[string]any{"log_queries": 1}
	}
	conn, err := chconn.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := schema.Ensure(ctx, conn, db); err != nil {
		return err
	}
	if drop {
		defer conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db)
	}
	first := last.AddDays(-(days - 1))
	var have uint64
	if err := conn.QueryRow(ctx, "SELECT uniqExact(pipeline, business_date, batch_id) FROM "+db+".events").Scan(&have); err != nil {
		return err
	}
	want := uint64(pipelines * days)
	switch {
	case have == want:
		fmt.Printf("load: %s already holds %d batches\n", db, have)
	case have == 0:
		if err := load(ctx, conn, db, pipelines, first, days); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s holds %d batches, not 0 or %d: drop it (DROP DATABASE %s) and run again", db, have, want, db)
	}
	var events uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".events").Scan(&events); err != nil {
		return err
	}
	fmt.Printf("data: %d pipelines x %d days = %d batches, %d event rows\n", pipelines, days, want, events)

	srv, err := serve.New(ctx, conn, serve.Options{Database: db, QueryTimeout: 30 * time.Second,
		Now: func() time.Time { return last.AddDays(2).In(time.UTC) }})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := serve.HTTPServer(srv)
	go hs.Serve(ln)
	defer hs.Close()
	base := "http://" + ln.Addr().String()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() (string, model.Date) {
		return pipelineName(rng.IntN(pipelines)), first.AddDays(rng.IntN(days))
	}
	kinds := []struct {
		name, target string
		url          func() string
	}{
		{"batch", "p99 <= 20 ms", func() string {
			p, d := pick()
			return base + "/api/v1/batches/" + p + "/" + d.String() + "/" + d.Compact()
		}},
		{"month", "p99 <= 20 ms", func() string {
			p, d := pick()
			m := model.Date{Year: d.Year, Month: d.Month, Day: 1}
			if m.Compare(first) < 0 {
				m = first
			}
			return base + "/?pipeline=" + p + "&from=" + m.String() + "&to=" + m.AddDays(29).String()
		}},
		{"day", dayTarget(pipelines), func() string {
			_, d := pick()
			return base + "/?from=" + d.String() + "&to=" + d.String()
		}},
	}
	load := loadAverage()
	fmt.Printf("%-6s %5s %8s %8s %8s %8s  %s\n", "kind", "n", "p50", "p90", "p99", "max", "target")
	var results []string
	for _, k := range kinds {
		if onlyKind != "" && k.name != onlyKind {
			continue
		}
		// A few requests first: connections, caches.
		for range 5 {
			if _, err := get(k.url()); err != nil {
				return err
			}
		}
		lat := make([]time.Duration, 0, n)
		since, cpu0 := time.Now(), cpuTime()
		for range n {
			start := time.Now()
			if _, err := get(k.url()); err != nil {
				return err
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(100 * time.Microsecond) }
		cpu := float64(cpuTime()-cpu0) / float64(time.Millisecond) / float64(n)
		fmt.Printf("%-6s %5d %8v %8v %8v %8v  %s; cpu %.1f ms/request\n", k.name, n, q(.5), q(.9), q(.99), lat[len(lat)-1].Round(100*time.Microsecond), k.target, cpu)
		if logQueries {
			if err := printQueryLog(ctx, conn, db, since, n); err != nil {
				return err
			}
		}
		results = append(results, fmt.Sprintf("RESULT bench=serve metric=%s_p99_%dx%d value=%.1f unit=ms", k.name, pipelines, days, float64(q(.99))/float64(time.Millisecond)))
		// The CPU of this process (server and client) per request: a
		// figure the other work of a shared machine moves less than the
		// latency.
		results = append(results, fmt.Sprintf("RESULT bench=serve metric=%s_cpu_%dx%d value=%.1f unit=ms", k.name, pipelines, days, cpu))
	}
	// The machine-readable lines (deploy/bench/table collects them), with
	// the peak RSS of this process (server and client) and the load at
	// the start of the measured requests.
	rss := peakRSSMiB()
	for _, r := range results {
		fmt.Printf("%s rss_mib=%d load=%s\n", r, rss, load)
	}
	return nil
}

// printQueryLog prints, for the statements on db that finished since
// since (system.query_log, log_queries=1 on the connection), each
// statement's shape (literals replaced by ?) with how many ran per
// request, their median and 99th percentile duration and their average
// rows read and returned: how much of a page's time ClickHouse spends,
// and on what.
func printQueryLog(ctx context.Context, conn driver.Conn, db string, since time.Time, requests int) error {
	if err := conn.Exec(ctx, "SYSTEM FLUSH LOGS"); err != nil {
		return fmt.Errorf("flush the query log: %w", err)
	}
	rows, err := conn.Query(ctx, "SELECT replaceRegexpAll(query, '\\'[^\\']*\\'|\\b[0-9]+\\b', '?') AS shape, count(), "+
		"quantile(0.5)(query_duration_ms), quantile(0.99)(query_duration_ms), avg(read_rows), avg(result_rows), "+
		"sum(ProfileEvents.Values[indexOf(ProfileEvents.Names, 'UserTimeMicroseconds')] + ProfileEvents.Values[indexOf(ProfileEvents.Names, 'SystemTimeMicroseconds')]) "+
		"FROM system.query_log "+
		"WHERE type = 2 AND event_time >= toDateTime(?) AND positionCaseInsensitive(query, 'query_log') = 0 AND position(query, ?) > 0 "+
		"GROUP BY shape ORDER BY count() DESC", since.Unix(), db+".")
	if err != nil {
		return fmt.Errorf("read the query log: %w", err)
	}
	defer rows.Close()
	var total uint64
	for rows.Next() {
		var (
			shape      string
			count, cpu uint64
			p50, p99   float64
			read, rets float64
		)
		if err := rows.Scan(&shape, &count, &p50, &p99, &read, &rets, &cpu); err != nil {
			return fmt.Errorf("read the query log: %w", err)
		}
		total += cpu
		if len(shape) > 160 {
			shape = shape[:160] + "..."
		}
		fmt.Printf("  query %.2f/request p50 %.0f ms p99 %.0f ms, cpu %.1f ms, read %.0f rows, %.0f out: %s\n",
			float64(count)/float64(requests), p50, p99, float64(cpu)/1e3/float64(count), read, rets, shape)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the query log: %w", err)
	}
	fmt.Printf("  clickhouse cpu %.1f ms/request\n", float64(total)/1e3/float64(requests))
	return nil
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the 1-minute load average (/proc/loadavg), "0" when it
// cannot be read.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "0"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "0"
}

// peakRSSMiB is this process's peak resident set (VmHWM), 0 when unknown.
func peakRSSMiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb / 1024
		}
	}
	return 0
}

// dayTarget is the all-pipelines day's target for an estate of n
// pipelines (docs/performance.md).
func dayTarget(n int) string {
	if n > 1000 {
		return "p99 <= 200 ms (10,000 pipelines)"
	}
	return "p99 <= 50 ms (1,000 pipelines)"
}

// get fetches url and fails on any status but 200.
func get(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	// Read and dropped: the client holds no page, so that the
	// allocations (and collections) of this process are the server's.
	n, err := io.Copy(io.Discard, resp.Body)
	return int(n), err
}

func pipelineName(i int) string { return fmt.Sprintf("bench.p%04d.daily", i) }

// load writes days batches of each pipeline: most delivered in full (ten
// events), some stopped at a boundary, a few failed, so the pages show
// every colour.
func load(ctx context.Context, conn driver.Conn, db string, pipelines int, first model.Date, days int) error {
	s, err := writer.New(conn, db)
	if err != nil {
		return err
	}
	start := time.Now()
	var buf []model.Event
	total := 0
	for p := range pipelines {
		name := pipelineName(p)
		for d := range days {
			buf = appendBatch(buf, name, first.AddDays(d), p*7919+d)
		}
		if len(buf) >= 200_000 || p == pipelines-1 {
			if err := s.Events(ctx, buf); err != nil {
				return err
			}
			total += len(buf)
			buf = buf[:0]
			fmt.Printf("\rload: %d pipelines, %d events, %.0f events/s", p+1, total, float64(total)/time.Since(start).Seconds())
		}
	}
	fmt.Println()
	return nil
}

// ladder is a full delivery, in order, with the system that emits each step.
var ladder = []struct {
	typ model.EventType
	sys model.System
	obj string
}{
	{model.JobStarted, model.Producer, ""},
	{model.ArtifactStaged, model.Producer, ".csv.tmp"},
	{model.ArtifactFinalized, model.Producer, ".csv"},
	{model.JobSucceeded, model.Producer, ""},
	{model.SignalPublished, model.Producer, ".flag"},
	{model.ArtifactTransferred, model.Exchange, ".csv"},
	{model.SignalTransferred, model.Exchange, ".flag"},
	{model.BatchIdentified, model.Consumer, ""},
	{model.ConsumeStarted, model.Consumer, ""},
	{model.ConsumeSucceeded, model.Consumer, ""},
}

// appendBatch appends one batch's events; seed picks where it stops.
func appendBatch(buf []model.Event, pipeline string, d model.Date, seed int) []model.Event {
	steps := len(ladder)
	switch {
	case seed%97 == 0:
		steps = 6 // transferred, signal never delivered: the seed case's shape
	case seed%89 == 0:
		steps = 3 // finalized, job not yet succeeded
	}
	at := d.In(time.UTC).Add(17 * time.Hour)
	id := d.Compact()
	for i := range steps {
		st := ladder[i]
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s-%02d", pipeline, id, i), Type: st.typ, Time: at.Add(time.Duration(i) * 3 * time.Minute),
			Pipeline: pipeline, BusinessDate: d, BatchID: id, System: st.sys, Component: string(st.sys) + "-1"}
		if st.obj != "" {
			e.Object = strings.ReplaceAll(pipeline, ".", "_") + "_" + id + st.obj
		}
		if st.typ == model.ArtifactFinalized || st.typ == model.ConsumeSucceeded {
			e.Rows, e.HasRows = 1000, true
		}
		buf = append(buf, e)
	}
	if seed%211 == 0 {
		buf = append(buf, model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s-f", pipeline, id), Type: model.ConsumeFailed, Time: at.Add(time.Hour),
			Pipeline: pipeline, BusinessDate: d, BatchID: id, System: model.Consumer, Error: "bench: consumer failed"})
	}
	return buf
}

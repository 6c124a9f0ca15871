package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/report"
	"github.com/handoff-dev/handoff/ingest/chconn"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/store"
)

// diagnoseConfig is diagnose's configuration: environment variables first,
// then flags, which win.
type diagnoseConfig struct {
	Events    string `env:"HANDOFF_EVENTS"`
	Contracts string `env:"HANDOFF_CONTRACTS"`
	AsOf      string `env:"HANDOFF_AS_OF"`
	Format    string `env:"HANDOFF_FORMAT"`
	// ClickHouse selects ClickHouse as the source; only the flag does, so
	// that HANDOFF_CLICKHOUSE_ADDR in the environment never overrides
	// --events.
	ClickHouse string
	Database   string `env:"HANDOFF_CLICKHOUSE_DATABASE" envDefault:"handoff"`
	User       string `env:"HANDOFF_CLICKHOUSE_USER"`
	Password   string `env:"HANDOFF_CLICKHOUSE_PASSWORD"`
	Pipeline   string
	From, To   string

	Batch      string
	Strict     bool
	Progress   bool
	CPUProfile string
}

// progressEvery is how often diagnose logs its progress while reading.
const progressEvery = 5 * time.Second

func runDiagnose(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return diagnose(ctx, args, stdin, stdout, stderr, time.Now())
}

// diagnose is the diagnose command; now is the default as-of time.
func diagnose(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, now time.Time) (err error) {
	started := time.Now()
	var cfg diagnoseConfig
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	fs := flag.NewFlagSet("handoff diagnose", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Events, "events", cfg.Events, "JSON-lines file of delivery events, - for standard input (env HANDOFF_EVENTS)")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file, or a directory of them (env HANDOFF_CONTRACTS); default: the default contract")
	fs.StringVar(&cfg.AsOf, "as-of", cfg.AsOf, "diagnose as of this RFC 3339 time (env HANDOFF_AS_OF); default: now")
	fs.StringVar(&cfg.Format, "format", cfg.Format, "output format, text or json (env HANDOFF_FORMAT); default: text")
	fs.StringVar(&cfg.Batch, "batch", "", "print only this batch, pipeline/business_date/batch_id (the others still count for continuity)")
	fs.BoolVar(&cfg.Strict, "strict", false, "stop at the first line that fails validation (exit 2)")
	fs.BoolVar(&cfg.Progress, "progress", false, "log progress every 5s even when standard error is a terminal")
	fs.StringVar(&cfg.ClickHouse, "clickhouse", "", "read events from ClickHouse at ADDR (host:port, native protocol) instead of a file; needs --pipeline or --batch")
	fs.StringVar(&cfg.Database, "database", cfg.Database, "ClickHouse database of handoff's tables (env HANDOFF_CLICKHOUSE_DATABASE)")
	fs.StringVar(&cfg.Pipeline, "pipeline", "", "with --clickhouse: the pipeline to read")
	fs.StringVar(&cfg.From, "from", "", "with --clickhouse: first business date to read, YYYY-MM-DD (default: open)")
	fs.StringVar(&cfg.To, "to", "", "with --clickhouse: last business date to read, YYYY-MM-DD (default: open)")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff diagnose --events FILE|- [--contract FILE|DIR] [--as-of RFC3339] [--format text|json] [--batch KEY] [--strict]")
		fmt.Fprintln(stderr, "       handoff diagnose --clickhouse ADDR (--pipeline P [--from DATE] [--to DATE] | --batch KEY) [--contract ...] [--as-of ...]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Replays delivery events and says, for every batch, where its delivery stopped.")
		fmt.Fprintln(stderr, "Exit status: 0 every batch delivered, 1 some batch not delivered, 2 bad usage or input, 3 failure.")
		fmt.Fprintln(stderr)
		fs.VisitAll(func(f *flag.Flag) {
			if f.Usage == "" { // hidden
				return
			}
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(stderr, "  --%s %s\n    \t%s\n", f.Name, name, usage)
		})
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}

	// Check every option before reading anything.
	switch cfg.Format {
	case "":
		cfg.Format = "text"
	case "text", "json":
	default:
		return usageError("--format %q: want text or json", cfg.Format)
	}
	asOf := now
	if cfg.AsOf != "" {
		t, err := time.Parse(time.RFC3339Nano, cfg.AsOf)
		if err != nil {
			return usageError("--as-of %q: want an RFC 3339 time such as 2026-10-03T00:00:00Z", cfg.AsOf)
		}
		asOf = t
	}
	var only model.BatchKey
	if cfg.Batch != "" {
		k, err := model.ParseBatchKey(cfg.Batch)
		if err != nil {
			return usageError("--batch: %v", err)
		}
		only = k
	}
	src, err := openSource(ctx, cfg, stdin, only)
	if err != nil {
		return err
	}
	contracts, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
	}

	set := newPipelineSets(contracts, asOf)
	// The folded events of a large run are a few hundred MiB and stay live
	// to the end: collect less often, under a soft limit.
	defer gcDefaults(diagnoseGCPercent, softMemoryLimit)()
	sum := &summary{rejected: map[model.RejectKind]int{}}
	msgs := bufio.NewWriter(stderr)
	defer msgs.Flush()
	var log *slog.Logger
	if cfg.Progress || !isTerminal(stderr) {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	rep := &reporter{w: msgs, name: src.name(), strict: cfg.Strict, log: log, started: started, next: started.Add(progressEvery), sum: sum}
	err = src.feed(ctx, set, rep)
	rep.hiddenBad()
	if err != nil {
		msgs.Flush()
		return err
	}

	out := bufio.NewWriterSize(stdout, 1<<20)
	sum.batches = set.Len()
	switch {
	case cfg.Batch != "":
		var ds []replay.Diagnosis
		if ps := set.sets[only.Pipeline]; ps != nil {
			ds = ps.Diagnose(func(k model.BatchKey) bool { return k == only })
		}
		if len(ds) == 0 {
			return usageError("--batch %s: no events of that batch in %s", cfg.Batch, src.name())
		}
		sum.count(ds)
		if cfg.Format == "json" {
			err = report.JSON(out, ds)
		} else {
			err = report.TextAll(out, ds)
		}
	case cfg.Format == "json":
		err = streamJSON(ctx, out, set, sum)
	default:
		var ds []replay.Diagnosis
		for _, p := range set.pipelines() {
			ds = append(ds, set.sets[p].Diagnose(nil)...)
		}
		sum.count(ds)
		err = report.TextAll(out, ds)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("writing the diagnoses: %w", err)
	}
	sum.print(msgs, time.Since(started))
	if err := msgs.Flush(); err != nil {
		return err
	}
	if sum.notDelivered() > 0 {
		return &exitError{code: exitNotDelivered}
	}
	return nil
}

// eventSource feeds a source's events into a set of batches, handing the
// input it rejects to rep. A file of JSON lines is one; ClickHouse (issue
// 3) is the next: a type with a feed method and a case in openSource.
type eventSource interface {
	// name says where the events come from, as bad-line reports and
	// errors name it.
	name() string
	feed(ctx context.Context, set *pipelineSets, rep *reporter) error
}

func openSource(ctx context.Context, cfg diagnoseConfig, stdin io.Reader, only model.BatchKey) (eventSource, error) {
	switch {
	case cfg.ClickHouse != "" && cfg.Events != "":
		return nil, usageError("--events and --clickhouse are exclusive: read from one source")
	case cfg.ClickHouse != "":
		return openClickHouse(ctx, cfg, only)
	case cfg.Pipeline != "" || cfg.From != "" || cfg.To != "":
		return nil, usageError("--pipeline, --from and --to select what to read from ClickHouse: use them with --clickhouse ADDR")
	case cfg.Events == "":
		return nil, usageError("--events FILE|- is required (or HANDOFF_EVENTS)")
	case cfg.Events == "-":
		return &fileSource{label: "stdin", r: stdin}, nil
	}
	f, err := os.Open(cfg.Events)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usageError("--events: %v", err)
		}
		return nil, err
	}
	// The file stays open until the process exits: diagnose runs once.
	return &fileSource{label: cfg.Events, r: f, closer: f}, nil
}

// fileSource reads JSON lines.
type fileSource struct {
	label  string
	r      io.Reader
	closer io.Closer
}

func (s *fileSource) name() string { return s.label }

func (s *fileSource) feed(ctx context.Context, set *pipelineSets, rep *reporter) error {
	if s.closer != nil {
		defer s.closer.Close()
	}
	st, err := jsonl.Read(ctx, s.r, jsonl.Options{}, func(line int, e *model.Event, err error) error {
		if err != nil {
			return rep.bad(line, err)
		}
		if !e.Type.HasBatch() {
			rep.sum.heartbeats++
		}
		set.Add(e)
		rep.tick(line)
		return nil
	})
	rep.sum.lines = st.Lines
	rep.sum.events = st.Events
	rep.sum.blank = st.Blank
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) || errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("%s: %w", s.label, err)
	}
	return nil
}

// maxBadShown is how many rejected lines diagnose reports one by one: a
// file of garbage must not flood standard error (200 MB of it once wrote
// 779,000 lines); the rest are counted by reason in the summary.
const maxBadShown = 10

// reporter reports rejected lines and progress while a source is read.
type reporter struct {
	w       *bufio.Writer
	name    string
	strict  bool
	log     *slog.Logger // nil: no progress
	started time.Time
	next    time.Time
	sum     *summary
	n       int
	nBad    int // rejected lines so far
}

// bad reports a rejected line: fatal under --strict, else printed and
// counted.
func (r *reporter) bad(line int, err error) error {
	kind := model.RejectBadJSON
	var ve *model.ValidationError
	if errors.As(err, &ve) && ve.Kind != "" {
		kind = ve.Kind
	}
	r.sum.rejected[kind]++
	if r.strict {
		return usageError("%s:%d: %v", r.name, line, err)
	}
	r.nBad++
	if r.nBad <= maxBadShown {
		fmt.Fprintf(r.w, "%s:%d: %v\n", r.name, line, err)
	}
	return nil
}

// hiddenBad says, in one line, how many rejected lines were not shown.
func (r *reporter) hiddenBad() {
	if n := r.nBad - maxBadShown; n > 0 {
		fmt.Fprintf(r.w, "%s: %s not shown (the first %d are above; the summary counts all by reason; --strict stops at the first)\n",
			r.name, count(n, "more rejected line"), maxBadShown)
	}
}

// tick logs progress every progressEvery while events are read.
func (r *reporter) tick(line int) {
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
type summary struct {
	lines, blank, events, heartbeats, batches int
	rejected                                  map[model.RejectKind]int
	status                                    [len(statusOrder)]int
}

var statusOrder = [...]replay.Status{replay.StatusDelivered, replay.StatusInProgress, replay.StatusLate, replay.StatusFailed, replay.StatusBroken}

func statusIndex(s replay.Status) int {
	return max(0, slices.Index(statusOrder[:], s))
}

// count tallies the diagnoses by status.
func (s *summary) count(ds []replay.Diagnosis) {
	for i := range ds {
		s.status[statusIndex(ds[i].Status)]++
	}
}

// notDelivered returns how many of the diagnosed batches are not delivered.
func (s *summary) notDelivered() int {
	n := 0
	for i, c := range s.status {
		if statusOrder[i] != replay.StatusDelivered {
			n += c
		}
	}
	return n
}

func (s *summary) print(w io.Writer, took time.Duration) {
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

// loadContracts loads --contract: a file or a directory. Errors name the
// file as given (relative to its parent directory) and its line.
func loadContracts(path string) (*contract.Set, error) {
	if path == "" {
		return nil, nil // a nil Set gives every pipeline the default contract
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, usageError("--contract %s: %v", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, usageError("--contract: %v", err)
	}
	set, err := contract.LoadFS(os.DirFS(filepath.Dir(abs)), filepath.Base(abs))
	if err != nil {
		return nil, usageError("--contract %s: %v", path, err)
	}
	return set, nil
}

// pipelineSets folds events into one batches.Set per pipeline. Everything
// a Set computes across batches (continuity with the previous batch, the
// first business date, heartbeats) is per pipeline, so the diagnoses are
// those of a single Set; but each pipeline can be diagnosed on its own, in
// parallel, and in batch key order (pipeline first) without sorting every
// key again.
type pipelineSets struct {
	contracts batches.Contracts
	asOf      time.Time
	sets      map[string]*batches.Set
	last      *batches.Set // the set of the previous event, often the same
	lastName  string
}

func newPipelineSets(c *contract.Set, asOf time.Time) *pipelineSets {
	return &pipelineSets{contracts: c, asOf: asOf, sets: make(map[string]*batches.Set)}
}

func (p *pipelineSets) Add(e *model.Event) {
	if p.last == nil || e.Pipeline != p.lastName {
		s := p.sets[e.Pipeline]
		if s == nil {
			s = batches.New(p.contracts, p.asOf)
			p.sets[e.Pipeline] = s
		}
		p.last, p.lastName = s, e.Pipeline
	}
	p.last.Add(e)
}

// Len returns the number of batches.
func (p *pipelineSets) Len() int {
	n := 0
	for _, s := range p.sets {
		n += s.Len()
	}
	return n
}

// pipelines returns the pipelines in order.
func (p *pipelineSets) pipelines() []string {
	out := make([]string, 0, len(p.sets))
	for name := range p.sets {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// jsonWindow is the most batches streamJSON diagnoses in one piece: a
// pipeline with more is cut into windows of its sorted keys.
const jsonWindow = 8192

// streamJSON writes the diagnosis of every batch as report.JSON does (one
// JSON array, one compact diagnosis per line), in batch key order. Pieces (a pipeline, or a
// window of a large one) are diagnosed and encoded in parallel and written
// in order, so memory holds a few pieces, never the whole output.
func streamJSON(ctx context.Context, w io.Writer, set *pipelineSets, sum *summary) error {
	type piece struct {
		set    *batches.Set
		lo, hi model.BatchKey // lo <= k < hi; zero lo: the whole set; zero hi: to the end
		out    []byte
		status [len(statusOrder)]int
		done   chan struct{}
	}
	var pieces []*piece
	for _, name := range set.pipelines() {
		s := set.sets[name]
		if s.Len() <= jsonWindow {
			pieces = append(pieces, &piece{set: s, done: make(chan struct{})})
			continue
		}
		keys := s.Keys()
		for i := 0; i < len(keys); i += jsonWindow {
			pc := &piece{set: s, lo: keys[i], done: make(chan struct{})}
			if j := i + jsonWindow; j < len(keys) {
				pc.hi = keys[j]
			}
			pieces = append(pieces, pc)
		}
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(pieces)))
	ctx, cancel := context.WithCancel(ctx)
	// tokens bounds the pieces diagnosed but not yet written.
	tokens := make(chan struct{}, 2*workers)
	todo := make(chan *piece)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for pc := range todo {
				var keep func(model.BatchKey) bool
				if !pc.lo.IsZero() {
					keep = func(k model.BatchKey) bool {
						return k.Compare(pc.lo) >= 0 && (pc.hi.IsZero() || k.Compare(pc.hi) < 0)
					}
				}
				ds := pc.set.Diagnose(keep)
				buf = buf[:0]
				for i := range ds {
					pc.status[statusIndex(ds[i].Status)]++
					if i > 0 {
						buf = append(buf, ",\n"...)
					}
					buf = ds[i].AppendJSON(buf)
				}
				pc.out = bytes.Clone(buf)
				close(pc.done)
			}
		}()
	}
	go func() {
		defer close(todo)
		for _, pc := range pieces {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case todo <- pc:
			case <-ctx.Done():
				return
			}
		}
	}()
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	// A piece may hold no batch (a pipeline of heartbeats only).
	n := 0
	for _, pc := range pieces {
		select {
		case <-pc.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if len(pc.out) > 0 {
			sep := ",\n"
			if n == 0 {
				sep = "\n"
			}
			n++
			if _, err := io.WriteString(w, sep); err != nil {
				return err
			}
			if _, err := w.Write(pc.out); err != nil {
				return err
			}
		}
		for j, c := range pc.status {
			sum.status[j] += c
		}
		pc.out = nil
		<-tokens
	}
	end := "\n]\n"
	if n == 0 {
		end = "]\n"
	}
	_, err := io.WriteString(w, end)
	return err
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// openClickHouse opens the ClickHouse source: one pipeline (optionally a
// range of business dates), or the pipeline of --batch around its date.
func openClickHouse(ctx context.Context, cfg diagnoseConfig, only model.BatchKey) (eventSource, error) {
	f := store.Filter{Pipeline: cfg.Pipeline, Heartbeats: true}
	for _, d := range []struct {
		flag, v string
		to      *model.Date
	}{{"from", cfg.From, &f.From}, {"to", cfg.To, &f.To}} {
		if d.v == "" {
			continue
		}
		date, err := model.ParseDate(d.v)
		if err != nil {
			return nil, usageError("--%s %q: %v", d.flag, d.v, err)
		}
		*d.to = date
	}
	if !only.IsZero() {
		if f.Pipeline != "" && f.Pipeline != only.Pipeline {
			return nil, usageError("--pipeline %s and --batch %s name different pipelines", f.Pipeline, only)
		}
		f.Pipeline = only.Pipeline
		if f.From.IsZero() && f.To.IsZero() {
			// The week before the batch holds its previous batch under any
			// daily or weekday schedule: continuity needs it.
			f.From, f.To = only.BusinessDate.AddDays(-7), only.BusinessDate
		}
	}
	if err := schema.CheckDatabase(cfg.Database); err != nil {
		return nil, usageError("--database: %v", err)
	}
	if f.Pipeline == "" {
		return nil, usageError("--clickhouse needs --pipeline P (optionally --from/--to) or --batch KEY: handoff reads one pipeline at a time")
	}
	conn, err := chconn.Open(ctx, chconn.Config{Addr: cfg.ClickHouse, User: cfg.User, Password: cfg.Password})
	if err != nil {
		return nil, err
	}
	st, err := store.New(conn, cfg.Database)
	if err != nil {
		conn.Close()
		return nil, usageError("--database: %v", err)
	}
	label := fmt.Sprintf("clickhouse %s/%s.events pipeline %s", cfg.ClickHouse, cfg.Database, f.Pipeline)
	return &clickhouseSource{label: label, st: st, filter: f, close: conn.Close}, nil
}

// clickhouseSource reads stored events; they were validated on ingest, so
// nothing is rejected here.
type clickhouseSource struct {
	label  string
	st     *store.Store
	filter store.Filter
	close  func() error
}

func (s *clickhouseSource) name() string { return s.label }

func (s *clickhouseSource) feed(ctx context.Context, set *pipelineSets, rep *reporter) error {
	defer s.close()
	n := 0
	err := s.st.EachEvent(ctx, s.filter, func(e model.Event) error {
		n++
		if !e.Type.HasBatch() {
			rep.sum.heartbeats++
		}
		set.Add(&e)
		rep.tick(n)
		return nil
	})
	rep.sum.lines = n
	rep.sum.events = n
	if err != nil {
		return fmt.Errorf("%s: %w", s.label, err)
	}
	return nil
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

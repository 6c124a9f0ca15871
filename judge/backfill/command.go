package backfill

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/internal/progress"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconfig"
	"github.com/handoff-dev/handoff/store/history"
)

// TopBreaks is how many breaks the summary of handoff backfill lists.
const TopBreaks = 10

// Command is one run of `handoff backfill` as its flags give it: the
// values as typed, checked by Prepare before anything connects.
type Command struct {
	From, To  string // business dates, YYYY-MM-DD, both required
	Pipelines []string
	AsOf      time.Time
	Contracts Contracts
	// Format is text (the summary on stdout) or json (the diagnoses as
	// one JSON array on stdout, the summary on stderr).
	Format string
	// Publish and DryRun: only Publish publishes; DryRun (the default)
	// says so explicitly.
	Publish, DryRun bool
	Kafka           cliflag.Kafka
	DiagnosesTopic  string
	ClickHouse      chconfig.Service
	Workers         int
	UnitRows        int
	ReadAhead       bool // Config.ReadAhead
	// Terminal draws the progress bar in place; ProgressInterval is how
	// often it is drawn (0: the default for Terminal).
	Terminal         bool
	ProgressInterval time.Duration

	cfg     Config
	publish bool
}

// Prepare checks every value, naming the flag of what is wrong (a usage
// error, exit 2).
func (c *Command) Prepare() error {
	for _, d := range []struct {
		flag, v string
		to      *model.Date
	}{{"from", c.From, &c.cfg.From}, {"to", c.To, &c.cfg.To}} {
		if d.v == "" {
			return exitcode.Usagef("--%s DATE is required (YYYY-MM-DD)", d.flag)
		}
		date, err := model.ParseDate(d.v)
		if err != nil {
			return exitcode.Usagef("--%s %q: %v", d.flag, d.v, err)
		}
		*d.to = date
	}
	if c.cfg.To.Compare(c.cfg.From) < 0 {
		return exitcode.Usagef("--to %s is before --from %s", c.cfg.To, c.cfg.From)
	}
	switch c.Format {
	case "":
		c.Format = "text"
	case "text", "json":
	default:
		return exitcode.Usagef("--format %q: want text or json", c.Format)
	}
	c.cfg.AsOf = c.AsOf.UTC().Truncate(time.Millisecond)
	for _, p := range c.Pipelines {
		if strings.TrimSpace(p) == "" {
			return exitcode.Usagef("--pipeline: empty name")
		}
	}
	c.cfg.Pipelines = c.Pipelines
	if c.Workers < 0 {
		return exitcode.Usagef("--workers %d: want a positive number (0: the number of CPUs)", c.Workers)
	}
	c.cfg.Workers = c.Workers
	if c.UnitRows < 0 {
		return exitcode.Usagef("--unit-rows %d: want a positive number (0: the default)", c.UnitRows)
	}
	c.cfg.UnitRows, c.cfg.ReadAhead = c.UnitRows, c.ReadAhead
	if c.cfg.UnitRows == 0 {
		c.cfg.UnitRows = DefaultUnitRows
	}
	// The baselines detect and diagnose learn, shown in every diagnosis.
	lo, err := history.BaselineOptions()
	if err != nil {
		return err
	}
	c.cfg.Baselines = &lo
	if c.Publish && c.DryRun {
		return exitcode.Usagef("--publish and --dry-run are exclusive")
	}
	c.Kafka.Brokers = cliflag.TrimList(c.Kafka.Brokers)
	if c.Publish && len(c.Kafka.Brokers) == 0 {
		return exitcode.Usagef("--publish needs Kafka: set HANDOFF_KAFKA_BROKERS or --kafka-brokers host:port")
	}
	// Publishing is asked for, never implied by the environment: the
	// variables that configure ingest would otherwise turn a look at
	// history into writes to the shared diagnoses topic.
	c.publish = c.Publish
	if c.publish && c.DiagnosesTopic == "" {
		return exitcode.Usagef("--diagnoses-topic: empty: name the topic to publish to, or use --dry-run")
	}
	if err := c.ClickHouse.Check(); err != nil {
		return exitcode.Usagef("%v: backfill reads the stored history", err)
	}
	return nil
}

// Run connects, diagnoses the range, publishes the diagnoses (unless a dry
// run), writes them (json) and the summary. A pipeline named with
// --pipeline that has no batch event in the range is a usage error (exit
// 2) naming it, before anything is folded or published.
func (c *Command) Run(ctx context.Context, stdout, stderr io.Writer) error {
	c.cfg.Contracts = c.Contracts
	conn, err := c.ClickHouse.Open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	st, err := history.New(conn, c.ClickHouse.Database)
	if err != nil {
		return exitcode.Usagef("--clickhouse-database: %v", err)
	}
	st.WindowRows = c.cfg.UnitRows // a large pipeline is read in windows of the same size
	st.ReplayOnly = true           // a diagnosis reads neither spec nor attrs
	var pub *Publisher
	if c.publish {
		pub, err = NewPublisher(ctx, KafkaConfig{Brokers: c.Kafka.Brokers, Topic: c.DiagnosesTopic, Partitions: c.Kafka.Partitions})
		if err != nil {
			return err
		}
		defer pub.Close()
	}
	var batchesDone atomic.Int64
	bar := progress.New(stderr, "backfill", "events", 0, progress.Options{Terminal: c.Terminal, Interval: c.ProgressInterval,
		Detail: func() string { return progress.Thousands(batchesDone.Load()) + " batches" }})
	out := &jsonArray{w: stdout, on: c.Format == "json"}
	// A published chunk is read by the Kafka writes after Chunk returns.
	hooks := Hooks{Planned: func(p Plan) { bar.SetTotal(p.Rows) }, Read: bar.Add, Recycle: pub == nil}
	hooks.Chunk = func(ch *Chunk) error {
		batchesDone.Add(int64(ch.Len()))
		if pub != nil {
			if err := pub.Publish(ctx, ch); err != nil {
				return err
			}
		}
		return out.chunk(ch)
	}
	bar.Start()
	sum, runErr := Run(ctx, st, c.cfg, hooks)
	if runErr == nil && pub != nil {
		runErr = pub.Wait()
	}
	if sum != nil {
		bar.SetTotal(sum.Events) // stored rows counted copies: end at 100%
	}
	bar.Stop()
	if runErr != nil {
		return noEvents(runErr)
	}
	if err := out.close(); err != nil {
		return err
	}
	if pub != nil {
		sum.Published = pub.Acked()
	}
	summaryTo := stdout
	if c.Format == "json" {
		summaryTo = stderr
	}
	return writing(sum.WriteText(summaryTo, c.cfg.From, c.cfg.To, c.cfg.AsOf, TopBreaks))
}

// noEvents turns a NoEventsError into the usage error of the command.
func noEvents(err error) error {
	if ne, ok := err.(*NoEventsError); ok {
		return exitcode.Usagef("--pipeline %s: %v: check the name, the range and --clickhouse-database", strings.Join(ne.Pipelines, ", "), ne)
	}
	return err
}

// jsonArray writes the diagnoses of the chunks as one JSON array, one
// diagnosis per line, when on: each chunk in one write (a chunk is a
// piece of the array, Chunk.JSON).
type jsonArray struct {
	w   io.Writer
	on  bool
	any bool
}

func (a *jsonArray) chunk(c *Chunk) error {
	if !a.on || c.Len() == 0 {
		return nil
	}
	p := c.JSON
	if !a.any {
		if _, err := io.WriteString(a.w, "[\n"); err != nil {
			return writing(err)
		}
		p, a.any = p[len(Sep):], true
	}
	var err error
	if pw, ok := a.w.(plainWriter); ok && c.Plain {
		_, err = pw.WritePlain(p)
	} else {
		_, err = a.w.Write(p)
	}
	return writing(err)
}

// plainWriter is an output that escapes what it is given (the command's
// standard output, a model.TextWriter) but can be told that bytes need
// no escape: a dry run's gigabytes of JSON, scanned for terminal escapes
// a second time after the encoder, cost a twentieth of its CPU.
type plainWriter interface {
	WritePlain(p []byte) (int, error)
}

func (a *jsonArray) close() error {
	if !a.on {
		return nil
	}
	end := "\n]\n"
	if !a.any {
		end = "[]\n"
	}
	_, err := io.WriteString(a.w, end)
	return writing(err)
}

// writing says that err, if any, happened while writing the output.
func writing(err error) error {
	if err != nil {
		return &writeError{err}
	}
	return nil
}

type writeError struct{ err error }

func (e *writeError) Error() string { return "writing the diagnoses: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

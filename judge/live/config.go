package live

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// Config configures handoff detect. Every field has an environment variable
// (HANDOFF_*) and a flag (RegisterFlags); flags override the environment,
// which overrides the defaults. The variables it shares with handoff ingest
// (brokers, topics, groups, ClickHouse) have the same names, so one
// environment file serves both.
type Config struct {
	// Kafka: the brokers, the events topic and the shape of the findings
	// topic when it is created.
	Kafka         cliflag.Kafka
	FindingsTopic string `env:"HANDOFF_FINDINGS_TOPIC" envDefault:"handoff.findings"`
	Group         string `env:"HANDOFF_DETECT_GROUP" envDefault:"handoff-detect"`
	IngestGroup   string `env:"HANDOFF_GROUP" envDefault:"handoff-ingest"`
	ResultsGroup  string `env:"HANDOFF_RESULTS_GROUP" envDefault:"handoff-ingest-results"`
	// ClickHouse is where the history is read on start. Its Cluster is
	// the cluster handoff ingest writes to (the same variable): set, the
	// history read back on a takeover goes through a freshly synchronised
	// replica of each shard (store/replicas).
	ClickHouse     chconfig.Service
	Contracts      string        `env:"HANDOFF_CONTRACTS"`
	ExpectFrom     string        `env:"HANDOFF_DETECT_EXPECT_FROM" envDefault:"yesterday"`
	RetainDays     int           `env:"HANDOFF_DETECT_RETAIN_DAYS" envDefault:"35"`
	Tick           time.Duration `env:"HANDOFF_DETECT_TICK" envDefault:"250ms"`
	Heartbeat      time.Duration `env:"HANDOFF_DETECT_HEARTBEAT" envDefault:"30s"`
	Instance       string        `env:"HANDOFF_DETECT_INSTANCE"`
	SessionTimeout time.Duration `env:"HANDOFF_SESSION_TIMEOUT" envDefault:"10s"`
	MetricsAddr    string        `env:"HANDOFF_DETECT_METRICS_ADDR" envDefault:"127.0.0.1:9465"`
	// Baselines turns on the early warning (unusual findings) and the
	// learned calendar of pipelines without a contract (docs/learned.md).
	Baselines bool `env:"HANDOFF_DETECT_BASELINES" envDefault:"true"`
	// Now, for demos and tests only, starts the detector's clock at this
	// RFC 3339 time instead of the wall clock; it then runs at the wall
	// clock's pace. Empty: the wall clock.
	Now string `env:"HANDOFF_DETECT_NOW"`
}

// LoadConfig reads the configuration from environ (nil: the process
// environment), with the defaults applied.
func LoadConfig(environ map[string]string) (Config, error) {
	var c Config
	opts := env.Options{}
	if environ != nil {
		opts.Environment = environ
	}
	if err := env.ParseWithOptions(&c, opts); err != nil {
		return c, fmt.Errorf("configuration from the environment: %w", err)
	}
	if c.Instance == "" {
		host, _ := os.Hostname()
		c.Instance = host + "-" + strconv.Itoa(os.Getpid())
	}
	return c, nil
}

// RegisterFlags defines one flag per field on fs, defaulting to the
// current values.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Kafka.RegisterFlags(fs)
	c.Kafka.RegisterTopicFlag(fs)
	fs.StringVar(&c.FindingsTopic, "findings-topic", c.FindingsTopic, "topic the findings are published to (HANDOFF_FINDINGS_TOPIC)")
	fs.StringVar(&c.Group, "group", c.Group, "the detectors' consumer group on the events topic (HANDOFF_DETECT_GROUP)")
	fs.StringVar(&c.IngestGroup, "ingest-group", c.IngestGroup, "handoff ingest's consumer group on the events topic: its commits say what ClickHouse holds (HANDOFF_GROUP)")
	fs.StringVar(&c.ResultsGroup, "results-group", c.ResultsGroup, "handoff ingest's consumer group on the findings topic (HANDOFF_RESULTS_GROUP)")
	c.Kafka.RegisterTopicShapeFlags(fs)
	c.ClickHouse.RegisterFlags(fs, chconfig.WithCluster())
	fs.StringVar(&c.Contracts, "contract", c.Contracts, "delivery contract file or directory (HANDOFF_CONTRACTS); without it every pipeline gets the default contract and nothing is expected")
	fs.StringVar(&c.ExpectFrom, "expect-from", c.ExpectFrom, "first business date of the expected-batch calendar: YYYY-MM-DD, today, yesterday, or off (HANDOFF_DETECT_EXPECT_FROM)")
	fs.IntVar(&c.RetainDays, "retain-days", c.RetainDays, "days of history read on start and of delivered batches remembered (HANDOFF_DETECT_RETAIN_DAYS)")
	fs.DurationVar(&c.Tick, "tick", c.Tick, "how often deadlines are checked and findings published (HANDOFF_DETECT_TICK)")
	fs.DurationVar(&c.Heartbeat, "heartbeat", c.Heartbeat, "how often the detector publishes its own process.heartbeat, 0 for never (HANDOFF_DETECT_HEARTBEAT)")
	fs.StringVar(&c.Instance, "instance", c.Instance, "name of this detector in its heartbeats (HANDOFF_DETECT_INSTANCE; default host-pid)")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", c.SessionTimeout, "consumer group session timeout (HANDOFF_SESSION_TIMEOUT)")
	fs.StringVar(&c.Now, "now", c.Now, "for demos and tests only: start the detector's clock at this RFC 3339 time (it then runs at the wall clock's pace) instead of now (HANDOFF_DETECT_NOW)")
	fs.BoolVar(&c.Baselines, "baselines", c.Baselines, "learn each pipeline's arrivals: early warnings (unusual, severity info) and the calendar of pipelines without a contract (HANDOFF_DETECT_BASELINES)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "address of /metrics and /healthz, empty to disable (HANDOFF_DETECT_METRICS_ADDR)")
}

// Validate checks the configuration, naming the flag of what is wrong.
func (c *Config) Validate() error {
	var errs []error
	if err := c.Kafka.Check(true); err != nil {
		errs = append(errs, err)
	}
	if err := topics.CheckName(c.FindingsTopic); err != nil {
		errs = append(errs, fmt.Errorf("--findings-topic: %w", err))
	}
	for _, g := range []struct{ flag, v string }{{"--group", c.Group}, {"--ingest-group", c.IngestGroup}, {"--results-group", c.ResultsGroup}} {
		if strings.TrimSpace(g.v) == "" {
			errs = append(errs, fmt.Errorf("%s: required", g.flag))
		}
	}
	if c.Group == c.IngestGroup {
		errs = append(errs, fmt.Errorf("--group %q: must differ from handoff ingest's group, or the two would split the events between them", c.Group))
	}
	if err := c.ClickHouse.Check(); err != nil {
		errs = append(errs, err)
	}
	// The calendar's start is checked against the detector's own clock
	// (--now when set), the one it will run on.
	now := time.Now()
	if clock, err := c.Clock(time.Now); err == nil {
		now = clock()
	}
	if _, err := c.ExpectFromDate(now); err != nil {
		errs = append(errs, err)
	}
	if c.RetainDays < 1 {
		errs = append(errs, fmt.Errorf("--retain-days %d: want 1 or more", c.RetainDays))
	}
	if c.Tick <= 0 {
		errs = append(errs, fmt.Errorf("--tick %s: want a positive duration", c.Tick))
	}
	if c.Heartbeat < 0 {
		errs = append(errs, fmt.Errorf("--heartbeat %s: want 0 (never) or a positive duration", c.Heartbeat))
	}
	if c.SessionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--session-timeout %s: want a positive duration", c.SessionTimeout))
	}
	if _, err := c.Clock(time.Now); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ExpectFromDate returns the first date of the expected-batch calendar as
// of now (the zero Date when off). A date before the retention window
// (--retain-days before now's date) is an error: the detector remembers
// nothing before the window, so the calendar could only start at its
// edge, and a user who asked for an earlier date must hear it, not find a
// later start in a log line.
func (c *Config) ExpectFromDate(now time.Time) (model.Date, error) {
	dt, err := c.expectFrom(now)
	if err != nil || dt.IsZero() {
		return dt, err
	}
	retain := c.RetainDays
	if retain <= 0 {
		retain = detect.DefaultRetain
	}
	y, m, d := now.UTC().Date()
	edge := model.Date{Year: y, Month: m, Day: d}.AddDays(-retain)
	if dt.Compare(edge) < 0 {
		need := retain
		for edge.Compare(dt) > 0 {
			edge, need = edge.AddDays(-1), need+1
		}
		return model.Date{}, fmt.Errorf("--expect-from %s is before the retention window: with --retain-days %d the detector remembers business dates from %s on (as of %s), so it cannot expect batches of %s; give --expect-from %s or later, or --retain-days %d to reach back to %s (HANDOFF_DETECT_EXPECT_FROM, HANDOFF_DETECT_RETAIN_DAYS)",
			dt, retain, model.Date{Year: y, Month: m, Day: d}.AddDays(-retain), now.UTC().Format(time.DateOnly), dt, model.Date{Year: y, Month: m, Day: d}.AddDays(-retain), need, dt)
	}
	return dt, nil
}

func (c *Config) expectFrom(now time.Time) (model.Date, error) {
	y, m, d := now.UTC().Date()
	today := model.Date{Year: y, Month: m, Day: d}
	switch strings.TrimSpace(c.ExpectFrom) {
	case "off", "":
		return model.Date{}, nil
	case "today":
		return today, nil
	case "yesterday":
		return today.AddDays(-1), nil
	}
	dt, err := model.ParseDate(c.ExpectFrom)
	if err != nil {
		return model.Date{}, fmt.Errorf("--expect-from %q: %v (want YYYY-MM-DD, today, yesterday or off)", c.ExpectFrom, err)
	}
	return dt, nil
}

// Clock returns the detector's clock: wall itself, or, with Now set, a
// clock that starts at Now and runs at wall's pace (so that the watermark
// moves as it does in production, only in another year).
func (c *Config) Clock(wall func() time.Time) (func() time.Time, error) {
	if strings.TrimSpace(c.Now) == "" {
		return wall, nil
	}
	start, err := cliflag.ParseTime("now", c.Now)
	if err != nil {
		return nil, fmt.Errorf("%v (HANDOFF_DETECT_NOW)", err)
	}
	offset := start.Sub(wall())
	return func() time.Time { return wall().Add(offset) }, nil
}

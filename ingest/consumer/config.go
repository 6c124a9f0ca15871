package consumer

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/store/chconfig"
	"github.com/handoff-dev/handoff/store/schema"
)

// Config configures the ingester. Every field has an environment variable
// (HANDOFF_*) and a flag (see RegisterFlags); flags override the
// environment, which overrides the defaults.
type Config struct {
	// Kafka holds the brokers, the events topic and the shape of the
	// topics created when missing, as every command takes them.
	Kafka    cliflag.Kafka
	DLQTopic string `env:"HANDOFF_DLQ_TOPIC" envDefault:"handoff.events.dlq"`
	Group    string `env:"HANDOFF_GROUP" envDefault:"handoff-ingest"`
	// ClickHouse is where the events are stored, as every command takes
	// it (the cluster included).
	ClickHouse   chconfig.Service
	RetainMonths int    `env:"HANDOFF_RETAIN_MONTHS" envDefault:"0"`
	Compression  string `env:"HANDOFF_CLICKHOUSE_COMPRESSION" envDefault:"none"`
	// LogQueries asks ClickHouse to log the ingester's queries (its
	// INSERTs) in system.query_log with their CPU time: how a benchmark
	// tells what the INSERTs cost the server from what other clients of
	// a shared server cost it.
	LogQueries      bool          `env:"HANDOFF_CLICKHOUSE_LOG_QUERIES" envDefault:"false"`
	BatchSize       int           `env:"HANDOFF_BATCH_SIZE" envDefault:"50000"`
	BatchBytes      ByteSize      `env:"HANDOFF_BATCH_BYTES" envDefault:"64MiB"`
	FlushInterval   time.Duration `env:"HANDOFF_FLUSH_INTERVAL" envDefault:"1s"`
	Workers         int           `env:"HANDOFF_DECODE_WORKERS" envDefault:"0"`
	RetryMax        time.Duration `env:"HANDOFF_RETRY_MAX" envDefault:"10s"`
	SessionTimeout  time.Duration `env:"HANDOFF_SESSION_TIMEOUT" envDefault:"10s"`
	ShutdownTimeout time.Duration `env:"HANDOFF_SHUTDOWN_TIMEOUT" envDefault:"30s"`
	MetricsAddr     string        `env:"HANDOFF_METRICS_ADDR" envDefault:"127.0.0.1:9464"`
}

// LoadConfig reads the configuration from the environment (defaults
// applied).
func LoadConfig() (Config, error) {
	var c Config
	return c, envError(env.Parse(&c))
}

// LoadConfigFrom is LoadConfig with an explicit environment (tests).
func LoadConfigFrom(environ map[string]string) (Config, error) {
	var c Config
	return c, envError(env.ParseWithOptions(&c, env.Options{Environment: environ}))
}

// envError names the variable of each value that did not parse (the
// parser names the Go field, which the user never sees).
func envError(err error) error {
	if err == nil {
		return nil
	}
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("configuration from the environment: %w", err)
	}
	var msgs []string
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			if f, ok := reflect.TypeFor[Config]().FieldByName(pe.Name); ok {
				msgs = append(msgs, f.Tag.Get("env")+": "+pe.Err.Error())
				continue
			}
		}
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("configuration from the environment: %s: %w", strings.Join(msgs, "; "), err)
}

// RegisterFlags defines one flag per field on fs, with the current values
// (from the environment) as defaults, so parsing fs overrides them.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Kafka.RegisterFlags(fs)
	c.Kafka.RegisterTopicFlag(fs)
	fs.StringVar(&c.DLQTopic, "dlq-topic", c.DLQTopic, "dead-letter topic (HANDOFF_DLQ_TOPIC)")
	fs.StringVar(&c.Group, "group", c.Group, "Kafka consumer group (HANDOFF_GROUP)")
	c.Kafka.RegisterTopicShapeFlags(fs)
	c.ClickHouse.RegisterFlags(fs, chconfig.WithCluster())
	fs.IntVar(&c.RetainMonths, "retain-months", c.RetainMonths, "drop history older than this many whole months before the current one, daily; 0 keeps everything (HANDOFF_RETAIN_MONTHS)")
	fs.StringVar(&c.Compression, "clickhouse-compression", c.Compression, "compression of blocks sent to ClickHouse: none, lz4 or zstd (HANDOFF_CLICKHOUSE_COMPRESSION)")
	fs.BoolVar(&c.LogQueries, "clickhouse-log-queries", c.LogQueries, "log the ingester's queries in ClickHouse's system.query_log, with their CPU time (HANDOFF_CLICKHOUSE_LOG_QUERIES)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "flush after this many messages (HANDOFF_BATCH_SIZE)")
	fs.Var(&c.BatchBytes, "batch-bytes", "flush before a batch's messages exceed this many bytes, e.g. 64MiB; the pipeline holds at most 4 times this (HANDOFF_BATCH_BYTES)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", c.FlushInterval, "flush messages at the latest this long after the first of a batch arrived (HANDOFF_FLUSH_INTERVAL)")
	fs.IntVar(&c.Workers, "decode-workers", c.Workers, "parallel decoders, 0 = number of CPUs (HANDOFF_DECODE_WORKERS)")
	fs.DurationVar(&c.RetryMax, "retry-max", c.RetryMax, "longest wait between retries while ClickHouse or Kafka is down (HANDOFF_RETRY_MAX)")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", c.SessionTimeout, "consumer group session timeout (HANDOFF_SESSION_TIMEOUT)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long a shutdown may spend on the last flush and commit (HANDOFF_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "serve Prometheus /metrics here; empty to disable (HANDOFF_METRICS_ADDR)")
}

// querySettings are the settings of the ingester's queries: the layout's
// insert settings, and log_queries when LogQueries is set.
func (c *Config) querySettings() map[string]any {
	s := c.Layout().InsertSettings()
	if c.LogQueries {
		s = maps.Clone(s)
		if s == nil {
			s = map[string]any{}
		}
		s["log_queries"] = 1
	}
	return s
}

// Layout is the schema layout the configuration selects: the cluster
// flavour when Cluster is set (docs/cluster.md).
func (c *Config) Layout() schema.Layout { return c.ClickHouse.Layout() }

// DefaultBatchBytes is the default of Config.BatchBytes (also what 0
// means).
const DefaultBatchBytes = 64 << 20

// Validate checks the configuration and says what to set, and fills
// BatchBytes when it is 0.
func (c *Config) Validate() error {
	var probs []string
	if err := c.Kafka.Check(true); err != nil {
		probs = append(probs, err.Error())
	}
	if err := c.ClickHouse.Check(); err != nil {
		probs = append(probs, err.Error())
	}
	if err := topics.CheckName(c.DLQTopic); err != nil {
		probs = append(probs, "dead-letter topic (HANDOFF_DLQ_TOPIC, --dlq-topic): "+err.Error())
	}
	if c.Group == "" {
		probs = append(probs, "the consumer group (HANDOFF_GROUP, --group) must not be empty")
	}
	if err := topics.CheckName(c.DLQTopic); err == nil && c.Kafka.Topic == c.DLQTopic {
		probs = append(probs, "the DLQ topic must differ from the events topic")
	}
	if c.BatchSize <= 0 {
		probs = append(probs, "batch size must be positive")
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.BatchBytes < 0 {
		probs = append(probs, "batch bytes (HANDOFF_BATCH_BYTES, --batch-bytes) must be positive, e.g. 64MiB")
	}
	if c.FlushInterval <= 0 {
		probs = append(probs, "flush interval must be positive")
	}
	if c.RetainMonths < 0 {
		probs = append(probs, "retained months (HANDOFF_RETAIN_MONTHS, --retain-months) must be 0 (keep everything) or more")
	}
	if len(probs) > 0 {
		return fmt.Errorf("configuration: %s", strings.Join(probs, "; "))
	}
	return nil
}

// ByteSize is a size in bytes, written as a whole number with an optional
// unit: B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000),
// for example 64MiB.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// UnmarshalText parses a size such as 64MiB (the environment variable).
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	num, mult := s, int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return fmt.Errorf("size %q: want a whole number of bytes with an optional unit B, KiB, MiB, GiB, KB, MB or GB, e.g. 64MiB", s)
	}
	*b = ByteSize(n * mult)
	return nil
}

// Set parses a size (the flag).
func (b *ByteSize) Set(s string) error { return b.UnmarshalText([]byte(s)) }

// String formats the size in the largest binary unit that divides it.
func (b *ByteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

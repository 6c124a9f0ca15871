package consumer

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/ingest/schema"
)

// Config configures the ingester. Every field has an environment variable
// (HANDOFF_*) and a flag (see RegisterFlags); flags override the
// environment, which overrides the defaults.
type Config struct {
	Brokers           []string      `env:"HANDOFF_KAFKA_BROKERS" envSeparator:","`
	Topic             string        `env:"HANDOFF_TOPIC" envDefault:"handoff.events"`
	DLQTopic          string        `env:"HANDOFF_DLQ_TOPIC" envDefault:"handoff.events.dlq"`
	Group             string        `env:"HANDOFF_GROUP" envDefault:"handoff-ingest"`
	Partitions        int           `env:"HANDOFF_TOPIC_PARTITIONS" envDefault:"6"`
	ReplicationFactor int           `env:"HANDOFF_TOPIC_REPLICATION" envDefault:"1"`
	ClickHouseAddr    string        `env:"HANDOFF_CLICKHOUSE_ADDR"`
	Database          string        `env:"HANDOFF_CLICKHOUSE_DATABASE" envDefault:"handoff"`
	User              string        `env:"HANDOFF_CLICKHOUSE_USER" envDefault:"default"`
	Password          string        `env:"HANDOFF_CLICKHOUSE_PASSWORD"`
	Compression       string        `env:"HANDOFF_CLICKHOUSE_COMPRESSION" envDefault:"none"`
	BatchSize         int           `env:"HANDOFF_BATCH_SIZE" envDefault:"50000"`
	FlushInterval     time.Duration `env:"HANDOFF_FLUSH_INTERVAL" envDefault:"1s"`
	Workers           int           `env:"HANDOFF_DECODE_WORKERS" envDefault:"0"`
	RetryMax          time.Duration `env:"HANDOFF_RETRY_MAX" envDefault:"10s"`
	SessionTimeout    time.Duration `env:"HANDOFF_SESSION_TIMEOUT" envDefault:"10s"`
	ShutdownTimeout   time.Duration `env:"HANDOFF_SHUTDOWN_TIMEOUT" envDefault:"30s"`
	MetricsAddr       string        `env:"HANDOFF_METRICS_ADDR" envDefault:"127.0.0.1:9464"`
}

// LoadConfig reads the configuration from the environment (defaults
// applied).
func LoadConfig() (Config, error) {
	var c Config
	if err := env.Parse(&c); err != nil {
		return c, fmt.Errorf("ingest configuration from the environment: %w", err)
	}
	return c, nil
}

// LoadConfigFrom is LoadConfig with an explicit environment (tests).
func LoadConfigFrom(environ map[string]string) (Config, error) {
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Environment: environ}); err != nil {
		return c, fmt.Errorf("ingest configuration from the environment: %w", err)
	}
	return c, nil
}

// StringList returns a flag.Value of a comma-separated list stored in *p
// (blanks trimmed, empty items dropped); setting it replaces the list, so
// a flag given on the command line wins over the environment's list.
func StringList(p *[]string) flag.Value { return listFlag{p} }

type listFlag struct{ p *[]string }

func (l listFlag) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l listFlag) Set(s string) error {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	*l.p = out
	return nil
}

// RegisterFlags defines one flag per field on fs, with the current values
// (from the environment) as defaults, so parsing fs overrides them.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(listFlag{&c.Brokers}, "kafka-brokers", "Kafka brokers, host:port[,host:port...] (HANDOFF_KAFKA_BROKERS)")
	fs.StringVar(&c.Topic, "topic", c.Topic, "events topic (HANDOFF_TOPIC)")
	fs.StringVar(&c.DLQTopic, "dlq-topic", c.DLQTopic, "dead-letter topic (HANDOFF_DLQ_TOPIC)")
	fs.StringVar(&c.Group, "group", c.Group, "Kafka consumer group (HANDOFF_GROUP)")
	fs.IntVar(&c.Partitions, "topic-partitions", c.Partitions, "partitions of topics created when missing (HANDOFF_TOPIC_PARTITIONS)")
	fs.IntVar(&c.ReplicationFactor, "topic-replication", c.ReplicationFactor, "replication factor of topics created when missing (HANDOFF_TOPIC_REPLICATION)")
	fs.StringVar(&c.ClickHouseAddr, "clickhouse-addr", c.ClickHouseAddr, "ClickHouse native protocol host:port (HANDOFF_CLICKHOUSE_ADDR)")
	fs.StringVar(&c.Database, "clickhouse-database", c.Database, "ClickHouse database (HANDOFF_CLICKHOUSE_DATABASE)")
	fs.StringVar(&c.User, "clickhouse-user", c.User, "ClickHouse user (HANDOFF_CLICKHOUSE_USER)")
	fs.StringVar(&c.Password, "clickhouse-password", c.Password, "ClickHouse password (HANDOFF_CLICKHOUSE_PASSWORD; prefer the variable)")
	fs.StringVar(&c.Compression, "clickhouse-compression", c.Compression, "compression of blocks sent to ClickHouse: none, lz4 or zstd (HANDOFF_CLICKHOUSE_COMPRESSION)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "flush after this many messages (HANDOFF_BATCH_SIZE)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", c.FlushInterval, "flush messages at the latest this long after the first of a batch arrived (HANDOFF_FLUSH_INTERVAL)")
	fs.IntVar(&c.Workers, "decode-workers", c.Workers, "parallel decoders, 0 = number of CPUs (HANDOFF_DECODE_WORKERS)")
	fs.DurationVar(&c.RetryMax, "retry-max", c.RetryMax, "longest wait between retries while ClickHouse or Kafka is down (HANDOFF_RETRY_MAX)")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", c.SessionTimeout, "consumer group session timeout (HANDOFF_SESSION_TIMEOUT)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long a shutdown may spend on the last flush and commit (HANDOFF_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "serve Prometheus /metrics here; empty to disable (HANDOFF_METRICS_ADDR)")
}

// Validate checks the configuration and says what to set.
func (c *Config) Validate() error {
	var brokers []string
	for _, b := range c.Brokers {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	c.Brokers = brokers
	var probs []string
	if len(c.Brokers) == 0 {
		probs = append(probs, "no Kafka brokers: set HANDOFF_KAFKA_BROKERS or --kafka-brokers")
	}
	if c.ClickHouseAddr == "" {
		probs = append(probs, "no ClickHouse address: set HANDOFF_CLICKHOUSE_ADDR or --clickhouse-addr")
	}
	if c.Topic == "" || c.DLQTopic == "" || c.Group == "" {
		probs = append(probs, "topic, DLQ topic and group must not be empty")
	}
	if c.Topic == c.DLQTopic {
		probs = append(probs, "the DLQ topic must differ from the events topic")
	}
	if c.BatchSize <= 0 {
		probs = append(probs, "batch size must be positive")
	}
	if c.FlushInterval <= 0 {
		probs = append(probs, "flush interval must be positive")
	}
	if err := schema.CheckDatabase(c.Database); err != nil {
		probs = append(probs, err.Error()+" (HANDOFF_CLICKHOUSE_DATABASE or --clickhouse-database)")
	}
	if len(probs) > 0 {
		return fmt.Errorf("ingest configuration: %s", strings.Join(probs, "; "))
	}
	return nil
}

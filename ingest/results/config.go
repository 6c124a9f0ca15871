package results

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config configures the results consumer. The fields with a HANDOFF_*
// variable are its own (RegisterFlags adds their flags); the others are
// shared with the events ingester and are copied from its configuration
// by the wiring (cmd/handoff), so one set of flags configures both.
type Config struct {
	FindingsTopic  string        `env:"HANDOFF_FINDINGS_TOPIC" envDefault:"handoff.findings"`
	DiagnosesTopic string        `env:"HANDOFF_DIAGNOSES_TOPIC" envDefault:"handoff.diagnoses"`
	Group          string        `env:"HANDOFF_RESULTS_GROUP" envDefault:"handoff-ingest-results"`
	BatchSize      int           `env:"HANDOFF_RESULTS_BATCH_SIZE" envDefault:"5000"`
	BatchBytes     int           `env:"HANDOFF_RESULTS_BATCH_BYTES" envDefault:"33554432"`
	FlushInterval  time.Duration `env:"HANDOFF_RESULTS_FLUSH_INTERVAL" envDefault:"1s"`

	// Shared with the events ingester (consumer.Config).
	Brokers           []string
	DLQTopic          string
	Database          string
	Partitions        int
	ReplicationFactor int
	RetryMax          time.Duration
	SessionTimeout    time.Duration
	ShutdownTimeout   time.Duration
}

// LoadConfig reads the results consumer's own settings from the
// environment (defaults applied); the shared fields stay empty.
func LoadConfig() (Config, error) {
	var c Config
	if err := env.Parse(&c); err != nil {
		return c, fmt.Errorf("results configuration from the environment: %w", err)
	}
	return c, nil
}

// RegisterFlags defines a flag per own setting on fs, with the current
// values as defaults, so parsing fs overrides the environment.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.FindingsTopic, "findings-topic", c.FindingsTopic, "findings topic, stored into findings_v2 (HANDOFF_FINDINGS_TOPIC; empty: do not consume findings)")
	fs.StringVar(&c.DiagnosesTopic, "diagnoses-topic", c.DiagnosesTopic, "diagnoses topic, stored into diagnoses_v2 (HANDOFF_DIAGNOSES_TOPIC; empty: do not consume diagnoses)")
	fs.StringVar(&c.Group, "results-group", c.Group, "consumer group of the findings and diagnoses topics (HANDOFF_RESULTS_GROUP)")
	fs.IntVar(&c.BatchSize, "results-batch-size", c.BatchSize, "store findings and diagnoses after this many records (HANDOFF_RESULTS_BATCH_SIZE)")
	fs.IntVar(&c.BatchBytes, "results-batch-bytes", c.BatchBytes, "... or after this many bytes of records (HANDOFF_RESULTS_BATCH_BYTES)")
	fs.DurationVar(&c.FlushInterval, "results-flush-interval", c.FlushInterval, "... or at the latest this long after the first record of a batch (HANDOFF_RESULTS_FLUSH_INTERVAL)")
}

// topics returns the topics to consume (the non-empty ones).
func (c *Config) topics() []string {
	var out []string
	for _, t := range []string{c.FindingsTopic, c.DiagnosesTopic} {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Validate checks the configuration, fills the defaults of the shared
// durations, and says what to set.
func (c *Config) Validate() error {
	var probs []string
	if len(c.Brokers) == 0 {
		probs = append(probs, "no Kafka brokers: set HANDOFF_KAFKA_BROKERS or --kafka-brokers")
	}
	if len(c.topics()) == 0 {
		probs = append(probs, "no topic to consume: set HANDOFF_FINDINGS_TOPIC or HANDOFF_DIAGNOSES_TOPIC")
	}
	if c.FindingsTopic != "" && c.FindingsTopic == c.DiagnosesTopic {
		probs = append(probs, fmt.Sprintf("findings and diagnoses topics are both %q: they must differ", c.FindingsTopic))
	}
	for _, t := range c.topics() {
		if t == c.DLQTopic {
			probs = append(probs, fmt.Sprintf("topic %q is also the dead-letter topic", t))
		}
	}
	if c.DLQTopic == "" || c.Group == "" || c.Database == "" {
		probs = append(probs, "dead-letter topic, results group and database must not be empty")
	}
	if c.BatchSize <= 0 {
		probs = append(probs, "results batch size must be positive (HANDOFF_RESULTS_BATCH_SIZE)")
	}
	if c.BatchBytes < MaxRecordBytes {
		probs = append(probs, fmt.Sprintf("results batch bytes %d: at least %d, the largest record (HANDOFF_RESULTS_BATCH_BYTES)", c.BatchBytes, MaxRecordBytes))
	}
	if c.FlushInterval <= 0 {
		probs = append(probs, "results flush interval must be positive (HANDOFF_RESULTS_FLUSH_INTERVAL)")
	}
	if len(probs) > 0 {
		return fmt.Errorf("results configuration: %s", strings.Join(probs, "; "))
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 10 * time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	return nil
}

package consumer_test

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/store/chconfig"
)

func TestConfigDefaultsEnvFlags(t *testing.T) {
	c, err := consumer.LoadConfigFrom(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Topic != "handoff.events" || c.DLQTopic != "handoff.events.dlq" || c.Group != "handoff-ingest" ||
		c.ClickHouse.Database != "handoff" || c.BatchSize != 50000 || c.FlushInterval != time.Second || c.MetricsAddr != "127.0.0.1:9464" {
		t.Errorf("defaults: %+v", c)
	}
	if err := c.Validate(); err == nil {
		t.Error("config without brokers and ClickHouse validated")
	}

	c, err = consumer.LoadConfigFrom(map[string]string{
		"HANDOFF_KAFKA_BROKERS":   "a:1, b:2",
		"HANDOFF_CLICKHOUSE_ADDR": "ch:9000",
		"HANDOFF_BATCH_SIZE":      "123",
		"HANDOFF_FLUSH_INTERVAL":  "250ms",
		"HANDOFF_TOPIC":           "t1",
		"HANDOFF_RETAIN_MONTHS":   "13",
	})
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--topic", "t2", "--kafka-brokers", "c:3", "--clickhouse-cluster", "prod"}); err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Topic != "t2" || !reflect.DeepEqual(c.Kafka.Brokers, []string{"c:3"}) || c.BatchSize != 123 ||
		c.FlushInterval != 250*time.Millisecond || c.ClickHouse.Addr != "ch:9000" || c.RetainMonths != 13 || c.Layout().Cluster != "prod" {
		t.Errorf("env then flags: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

// TestConfigRejectsHostileDatabase: the database name reaches SQL
// unquoted, so Validate (exit 2 for handoff ingest) refuses anything but a
// plain identifier, through schema.CheckDatabase.
func TestConfigRejectsHostileDatabase(t *testing.T) {
	for _, db := range []string{"db.events FINAL WHERE 1=1 --", "h; DROP DATABASE handoff", "h`x", ""} {
		c, err := consumer.LoadConfigFrom(map[string]string{
			"HANDOFF_KAFKA_BROKERS":       "a:1",
			"HANDOFF_CLICKHOUSE_ADDR":     "ch:9000",
			"HANDOFF_CLICKHOUSE_DATABASE": db,
		})
		if err != nil {
			t.Fatal(err)
		}
		c.ClickHouse.Database = db // an empty variable leaves the default
		err = c.Validate()
		if err == nil || !strings.Contains(err.Error(), "database name") || !strings.Contains(err.Error(), "--clickhouse-database") {
			t.Errorf("database %q: Validate() = %v, want an error naming the database and the flag", db, err)
		}
	}
}

func TestConfigBatchBytes(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want consumer.ByteSize
		err  bool
	}{
		{"", 64 << 20, false}, // the default
		{"1048576", 1 << 20, false},
		{"512KiB", 512 << 10, false},
		{"2 GiB", 2 << 30, false},
		{"10MB", 10_000_000, false},
		{"100B", 100, false},
		{"64M", 0, true},
		{"-1MiB", 0, true},
		{"lots", 0, true},
	} {
		environ := map[string]string{}
		if tt.env != "" {
			environ["HANDOFF_BATCH_BYTES"] = tt.env
		}
		c, err := consumer.LoadConfigFrom(environ)
		if tt.err {
			if err == nil || !strings.Contains(err.Error(), "HANDOFF_BATCH_BYTES") {
				t.Errorf("HANDOFF_BATCH_BYTES=%q: error %v, want one naming the variable", tt.env, err)
			}
			continue
		}
		if err != nil || c.BatchBytes != tt.want {
			t.Errorf("HANDOFF_BATCH_BYTES=%q: %d, %v; want %d", tt.env, c.BatchBytes, err, tt.want)
		}
	}
	var c consumer.Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--batch-bytes", "3MiB"}); err != nil || c.BatchBytes != 3<<20 || c.BatchBytes.String() != "3MiB" {
		t.Errorf("--batch-bytes 3MiB: %v, %v", c.BatchBytes.String(), err)
	}
	if err := fs.Parse([]string{"--batch-bytes", "3 apples"}); err == nil {
		t.Error("--batch-bytes '3 apples' accepted")
	}
}

func TestConfigValidateNamesBadKafkaSettings(t *testing.T) {
	base := consumer.Config{Kafka: cliflag.Kafka{Brokers: []string{"127.0.0.1:9092"}, Topic: "t", Partitions: 1, Replication: 1},
		ClickHouse: chconfig.Service{Addr: "ch:9000", Database: "handoff"}, DLQTopic: "t.dlq", Group: "g",
		BatchSize: 1, FlushInterval: time.Second}
	if err := base.Validate(); err != nil || base.BatchBytes != consumer.DefaultBatchBytes {
		t.Fatalf("valid config: %v, batch bytes %d", err, base.BatchBytes)
	}
	for _, tt := range []struct {
		change func(*consumer.Config)
		say    string
	}{
		{func(c *consumer.Config) { c.Kafka.Brokers = []string{"127.0.0.1:99999"} }, `port "99999"`},
		{func(c *consumer.Config) { c.Kafka.Topic = "bad topic" }, "--topic (HANDOFF_TOPIC)"},
		{func(c *consumer.Config) { c.DLQTopic = "" }, "dead-letter topic"},
		{func(c *consumer.Config) { c.BatchBytes = -1 }, "HANDOFF_BATCH_BYTES"},
		{func(c *consumer.Config) { c.ClickHouse.Cluster = "c ON CLUSTER x" }, "HANDOFF_CLICKHOUSE_CLUSTER"},
		{func(c *consumer.Config) { c.RetainMonths = -1 }, "HANDOFF_RETAIN_MONTHS"},
	} {
		c := base
		tt.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.say) {
			t.Errorf("error %v, want one saying %q", err, tt.say)
		}
	}
}

package consumer_test

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/consumer"
)

func TestConfigDefaultsEnvFlags(t *testing.T) {
	c, err := consumer.LoadConfigFrom(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Topic != "handoff.events" || c.DLQTopic != "handoff.events.dlq" || c.Group != "handoff-ingest" ||
		c.Database != "handoff" || c.BatchSize != 50000 || c.FlushInterval != time.Second || c.MetricsAddr != "127.0.0.1:9464" {
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
	})
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--topic", "t2", "--kafka-brokers", "c:3"}); err != nil {
		t.Fatal(err)
	}
	if c.Topic != "t2" || !reflect.DeepEqual(c.Brokers, []string{"c:3"}) || c.BatchSize != 123 ||
		c.FlushInterval != 250*time.Millisecond || c.ClickHouseAddr != "ch:9000" {
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
		c.Database = db // an empty variable leaves the default
		err = c.Validate()
		if err == nil || !strings.Contains(err.Error(), "database name") || !strings.Contains(err.Error(), "--clickhouse-database") {
			t.Errorf("database %q: Validate() = %v, want an error naming the database and the flag", db, err)
		}
	}
}

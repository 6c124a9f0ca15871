package consumer_test

import (
	"flag"
	"reflect"
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

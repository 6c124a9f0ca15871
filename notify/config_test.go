package notify

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/cliflag"
)

// TestValidate: each wrong setting is refused with a message naming what to
// set; a complete configuration passes.
func TestValidate(t *testing.T) {
	good := func() Config {
		return Config{
			Kafka:         cliflag.Kafka{Brokers: []string{"127.0.0.1:19092"}, Topic: "handoff.events", Partitions: 6, Replication: 1},
			FindingsTopic: "handoff.findings", DLQTopic: "handoff.events.dlq", Group: "handoff-notify",
			AlertmanagerURLs: []string{"http://127.0.0.1:9093"},
			Lease:            5 * time.Minute, Resend: time.Minute, RetryFor: time.Minute, RetryMax: time.Second, RequestTimeout: time.Second,
		}
	}
	for _, tt := range []struct {
		name   string
		change func(*Config)
		want   string // "" = valid
	}{
		{"valid", func(*Config) {}, ""},
		{"webhook only", func(c *Config) {
			c.AlertmanagerURLs, c.WebhookURLs, c.WebhookSecret = nil, []string{"https://h/x"}, "s"
		}, ""},
		{"no brokers", func(c *Config) { c.Kafka.Brokers = nil }, "HANDOFF_KAFKA_BROKERS"},
		{"no receiver", func(c *Config) { c.AlertmanagerURLs = nil }, "HANDOFF_ALERTMANAGER_URLS"},
		{"bad receiver URL", func(c *Config) { c.AlertmanagerURLs = []string{"127.0.0.1:9093"} }, `receiver URL "127.0.0.1:9093"`},
		{"webhook without secret", func(c *Config) { c.WebhookURLs = []string{"https://h/x"} }, "HANDOFF_WEBHOOK_SECRET"},
		{"resend not within lease", func(c *Config) { c.Resend = c.Lease }, "HANDOFF_ALERT_RESEND"},
		{"findings topic is the DLQ", func(c *Config) { c.DLQTopic = c.FindingsTopic }, "also the dead-letter topic"},
		{"bad serve URL", func(c *Config) { c.ServeURL = "handoff:8080" }, "HANDOFF_SERVE_URL"},
	} {
		c := good()
		tt.change(&c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one naming %q", tt.name, err, tt.want)
		}
	}
}

// TestListFlagsReplaceEnvironment: a list flag given on the command line
// replaces the list from the environment, split at commas.
func TestListFlagsReplaceEnvironment(t *testing.T) {
	t.Setenv("HANDOFF_ALERTMANAGER_URLS", "http://env-a:9093,http://env-b:9093")
	t.Setenv("HANDOFF_WEBHOOK_URLS", "")
	c, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://env-a:9093", "http://env-b:9093"}; !slices.Equal(c.AlertmanagerURLs, want) {
		t.Fatalf("from the environment: %v, want %v", c.AlertmanagerURLs, want)
	}
	fs := flag.NewFlagSet("notify", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--alertmanager-url", "http://am-1:9093, http://am-2:9093", "--lease", "2m"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://am-1:9093", "http://am-2:9093"}; !slices.Equal(c.AlertmanagerURLs, want) || c.Lease != 2*time.Minute {
		t.Errorf("after flags: %v lease %v, want %v and 2m", c.AlertmanagerURLs, c.Lease, want)
	}
}

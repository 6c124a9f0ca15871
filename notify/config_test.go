package notify

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/cliflag"
)

// TestValidate: each wrong setting is refused with a message naming what to
// set; a complete configuration passes.
func TestValidate(t *testing.T) {
	good := func() Config {
		return Config{
			Kafka:         cliflag.Kafka{Brokers: []string{"127.0.0.1:19092"}, Topic: "handoff.events", Partitions: 6, Replication: 1},
			FindingsTopic: "handoff.findings", DLQTopic: "handoff.events.dlq", StateTopic: "handoff.notify.state", Group: "handoff-notify",
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
		{"state topic is the findings topic", func(c *Config) { c.StateTopic = c.FindingsTopic }, "HANDOFF_NOTIFY_STATE_TOPIC"},
		{"no state topic", func(c *Config) { c.StateTopic = "" }, "state topic"},
		{"negative since", func(c *Config) { c.Since = -time.Hour }, "HANDOFF_NOTIFY_SINCE"},
		{"since off", func(c *Config) { c.Since = 0 }, ""},
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

// TestHolds reads the hold per severity from the environment and the flag
// (the flag wins) and refuses what is not severity=duration, naming it.
func TestHolds(t *testing.T) {
	t.Setenv("HANDOFF_NOTIFY_FOR", "warning=10m, info=30m")
	c, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.For["warning"] != 10*time.Minute || c.For["info"] != 30*time.Minute || len(c.For) != 2 {
		t.Fatalf("from the environment: %v", c.For)
	}
	if c.Since != time.Hour || c.StateTopic != "handoff.notify.state" {
		t.Errorf("defaults: since %v, state topic %q; want 1h and handoff.notify.state", c.Since, c.StateTopic)
	}
	fs := flag.NewFlagSet("notify", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--for", "critical=0s,warning=2m", "--since", "30m"}); err != nil {
		t.Fatal(err)
	}
	if got := c.For.String(); got != "critical=0s,warning=2m0s" || c.Since != 30*time.Minute {
		t.Errorf("after flags: for %q since %v, want critical=0s,warning=2m0s and 30m", got, c.Since)
	}
	for _, tt := range []struct{ in, want string }{
		{"page=1m", `unknown severity "page"`},
		{"warning", "want severity=duration"},
		{"warning=soon", "want severity=duration"},
		{"warning=-1m", "want 0 to 24h0m0s"},
		{"warning=25h", "want 0 to 24h0m0s"},
		{"warning=1m,warning=2m", "given twice"},
	} {
		var h Holds
		if err := h.Set(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.in, err, tt.want)
		}
	}
	t.Setenv("HANDOFF_NOTIFY_FOR", "major=1m")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), `unknown severity "major"`) {
		t.Errorf("HANDOFF_NOTIFY_FOR=major=1m: %v, want the severity named", err)
	}
}

// TestHoldOf: the contract's for wins, 0 included; else the severity's
// hold (a finding without severity is warning); else none.
func TestHoldOf(t *testing.T) {
	c := Config{For: Holds{"warning": 10 * time.Minute, "critical": time.Minute}}
	for _, tt := range []struct {
		name string
		f    detect.Finding
		want time.Duration
	}{
		{"severity", detect.Finding{Severity: "critical"}, time.Minute},
		{"no severity is warning", detect.Finding{}, 10 * time.Minute},
		{"severity without hold", detect.Finding{Severity: "info"}, 0},
		{"contract for wins", detect.Finding{Severity: "warning", For: 3 * time.Minute, HasFor: true}, 3 * time.Minute},
		{"contract for 0 wins", detect.Finding{Severity: "warning", HasFor: true}, 0},
	} {
		if got := c.holdOf(&tt.f); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

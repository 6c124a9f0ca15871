package notify

import (
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/model/contract"
)

// Config configures `handoff notify`. Every field has a HANDOFF_* variable
// and a flag (RegisterFlags); the flag wins.
type Config struct {
	// Kafka: the brokers and the partitions of the topics created when
	// missing (the events topic is not notify's).
	Kafka         cliflag.Kafka
	FindingsTopic string `env:"HANDOFF_FINDINGS_TOPIC" envDefault:"handoff.findings"`
	DLQTopic      string `env:"HANDOFF_DLQ_TOPIC" envDefault:"handoff.events.dlq"`
	Group         string `env:"HANDOFF_NOTIFY_GROUP" envDefault:"handoff-notify"`
	// StateTopic keeps, per group, what the group's first start decided
	// (which findings were too old to page), so that a restart decides
	// the same; compacted, one record per group.
	StateTopic string `env:"HANDOFF_NOTIFY_STATE_TOPIC" envDefault:"handoff.notify.state"`

	// AlertmanagerURLs are the base URLs of every Alertmanager to send to
	// (an HA pair: each one gets every alert).
	AlertmanagerURLs []string `env:"HANDOFF_ALERTMANAGER_URLS" envSeparator:","`
	// WebhookURLs receive every finding record as JSON, signed with
	// WebhookSecret.
	WebhookURLs   []string `env:"HANDOFF_WEBHOOK_URLS" envSeparator:","`
	WebhookSecret string   `env:"HANDOFF_WEBHOOK_SECRET"`
	// ServeURL is the base URL of `handoff serve`, for the batch page link.
	ServeURL string `env:"HANDOFF_SERVE_URL"`

	// Lease is how long an open alert stays firing in Alertmanager without
	// being sent again (its endsAt); Resend is how often open alerts are
	// sent again, well within the lease.
	Lease  time.Duration `env:"HANDOFF_ALERT_LEASE" envDefault:"5m"`
	Resend time.Duration `env:"HANDOFF_ALERT_RESEND" envDefault:"1m"`
	// RetryFor is how long a delivery to one receiver is retried (capped
	// exponential backoff up to RetryMax) before the record goes to the
	// dead-letter topic; RequestTimeout bounds each attempt.
	RetryFor       time.Duration `env:"HANDOFF_NOTIFY_RETRY_FOR" envDefault:"15m"`
	RetryMax       time.Duration `env:"HANDOFF_NOTIFY_RETRY_MAX" envDefault:"30s"`
	RequestTimeout time.Duration `env:"HANDOFF_NOTIFY_REQUEST_TIMEOUT" envDefault:"10s"`

	// Since is the window of the group's first start (no committed
	// offset yet): a finding raised more than Since before that start is
	// recorded as seen and never delivered (its resolution neither); 0
	// delivers the whole history.
	Since time.Duration `env:"HANDOFF_NOTIFY_SINCE" envDefault:"1h"`
	// For is the hold per severity: a finding pages (reaches Alertmanager)
	// only once it has been open that long; resolved sooner, it never
	// does. A contract's own for wins. Severities not listed: no hold.
	For Holds `env:"HANDOFF_NOTIFY_FOR"`

	MetricsAddr string `env:"HANDOFF_NOTIFY_METRICS_ADDR" envDefault:"127.0.0.1:9466"`
}

// LoadConfig reads the configuration from the environment, defaults
// applied.
func LoadConfig() (Config, error) {
	var c Config
	if err := env.Parse(&c); err != nil {
		return c, fmt.Errorf("configuration from the environment: %w", err)
	}
	return c, nil
}

// RegisterFlags defines a flag per setting on fs, with the current values
// as defaults, so parsing fs overrides the environment.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Kafka.RegisterFlags(fs)
	fs.StringVar(&c.FindingsTopic, "findings-topic", c.FindingsTopic, "findings topic to consume (HANDOFF_FINDINGS_TOPIC)")
	fs.StringVar(&c.DLQTopic, "dlq-topic", c.DLQTopic, "dead-letter topic for findings no receiver took after retrying (HANDOFF_DLQ_TOPIC)")
	fs.StringVar(&c.Group, "group", c.Group, "consumer group of notify (HANDOFF_NOTIFY_GROUP)")
	fs.StringVar(&c.StateTopic, "state-topic", c.StateTopic, "compacted topic keeping what each group's first start decided (HANDOFF_NOTIFY_STATE_TOPIC)")
	c.Kafka.RegisterTopicShapeFlags(fs)
	fs.Var(cliflag.List{P: &c.AlertmanagerURLs}, "alertmanager-url", "Alertmanager base URLs, comma-separated; each gets every alert (HANDOFF_ALERTMANAGER_URLS)")
	fs.Var(cliflag.List{P: &c.WebhookURLs}, "webhook-url", "webhook URLs, comma-separated; each gets every finding as JSON (HANDOFF_WEBHOOK_URLS)")
	fs.Var(cliflag.Secret{P: &c.WebhookSecret}, "webhook-secret", "HMAC-SHA256 key of the X-Handoff-Signature header (HANDOFF_WEBHOOK_SECRET)")
	fs.StringVar(&c.ServeURL, "serve-url", c.ServeURL, "base URL of handoff serve, for the batch page link (HANDOFF_SERVE_URL)")
	fs.DurationVar(&c.Lease, "lease", c.Lease, "endsAt of an open alert: sending time + lease (HANDOFF_ALERT_LEASE)")
	fs.DurationVar(&c.Resend, "resend", c.Resend, "send open alerts again this often; less than the lease (HANDOFF_ALERT_RESEND)")
	fs.DurationVar(&c.RetryFor, "retry-for", c.RetryFor, "retry a delivery this long, then dead-letter it (HANDOFF_NOTIFY_RETRY_FOR)")
	fs.DurationVar(&c.RetryMax, "retry-max", c.RetryMax, "cap of the exponential backoff between attempts (HANDOFF_NOTIFY_RETRY_MAX)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "timeout of one HTTP request (HANDOFF_NOTIFY_REQUEST_TIMEOUT)")
	fs.DurationVar(&c.Since, "since", c.Since, "first start of the group: do not deliver findings raised longer ago than this; 0: deliver all (HANDOFF_NOTIFY_SINCE)")
	fs.Var(&c.For, "for", "hold per severity before a finding pages, such as warning=10m,info=30m; a contract's for wins (HANDOFF_NOTIFY_FOR)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "Prometheus /metrics and /healthz address; empty: off (HANDOFF_NOTIFY_METRICS_ADDR)")
}

// Validate checks the configuration and says what to set.
func (c *Config) Validate() error {
	var probs []string
	if err := c.Kafka.Check(true); err != nil {
		probs = append(probs, err.Error())
	}
	if len(c.AlertmanagerURLs)+len(c.WebhookURLs) == 0 {
		probs = append(probs, "no receiver: set HANDOFF_ALERTMANAGER_URLS (--alertmanager-url) or HANDOFF_WEBHOOK_URLS (--webhook-url)")
	}
	for _, u := range append(append([]string{}, c.AlertmanagerURLs...), c.WebhookURLs...) {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			probs = append(probs, fmt.Sprintf("receiver URL %q: want http(s)://host[:port][/path]", u))
		}
	}
	if c.ServeURL != "" {
		if p, err := url.Parse(c.ServeURL); err != nil || p.Host == "" {
			probs = append(probs, fmt.Sprintf("serve URL %q: want http(s)://host[:port][/path] (HANDOFF_SERVE_URL)", c.ServeURL))
		}
	}
	if len(c.WebhookURLs) > 0 && c.WebhookSecret == "" {
		probs = append(probs, "webhooks without a secret: set HANDOFF_WEBHOOK_SECRET (--webhook-secret) so receivers can verify X-Handoff-Signature")
	}
	if c.FindingsTopic == "" || c.DLQTopic == "" || c.StateTopic == "" || c.Group == "" {
		probs = append(probs, "findings topic, dead-letter topic, state topic and group must not be empty")
	}
	if c.FindingsTopic != "" && c.FindingsTopic == c.DLQTopic {
		probs = append(probs, fmt.Sprintf("findings topic %q is also the dead-letter topic", c.FindingsTopic))
	}
	if c.StateTopic != "" && (c.StateTopic == c.FindingsTopic || c.StateTopic == c.DLQTopic) {
		probs = append(probs, fmt.Sprintf("state topic %q is also the findings or dead-letter topic (HANDOFF_NOTIFY_STATE_TOPIC)", c.StateTopic))
	}
	if c.Since < 0 {
		probs = append(probs, fmt.Sprintf("since %v: want 0 (deliver the whole history) or a positive window such as 1h (HANDOFF_NOTIFY_SINCE)", c.Since))
	}
	if c.Lease <= 0 || c.Resend <= 0 || c.Resend >= c.Lease {
		probs = append(probs, fmt.Sprintf("lease %v and resend %v: both positive and resend shorter than the lease, or open alerts expire between sends (HANDOFF_ALERT_LEASE, HANDOFF_ALERT_RESEND)", c.Lease, c.Resend))
	}
	if c.RetryFor <= 0 || c.RetryMax <= 0 || c.RequestTimeout <= 0 {
		probs = append(probs, "retry-for, retry-max and request-timeout must be positive")
	}
	if len(probs) > 0 {
		return fmt.Errorf("configuration: %s", strings.Join(probs, "; "))
	}
	return nil
}

// Holds is the hold before paging per severity: "warning=10m,info=30m".
// It is a flag.Value and reads from the environment (TextUnmarshaler).
type Holds map[string]time.Duration

// String returns the holds as "severity=duration", in severity order.
func (h *Holds) String() string {
	if h == nil || len(*h) == 0 {
		return ""
	}
	var out []string
	for _, s := range []string{contract.SeverityCritical, contract.SeverityWarning, contract.SeverityInfo} {
		if d, ok := (*h)[s]; ok {
			out = append(out, s+"="+d.String())
		}
	}
	return strings.Join(out, ",")
}

// Set replaces the holds with those of s ("" clears them). A severity
// other than critical, warning and info, a bad or negative duration, or
// one over a day is refused, named.
func (h *Holds) Set(s string) error {
	out := Holds{}
	for _, item := range cliflag.SplitList(s) {
		sev, ds, ok := strings.Cut(item, "=")
		sev = strings.TrimSpace(sev)
		switch sev {
		case contract.SeverityCritical, contract.SeverityWarning, contract.SeverityInfo:
		default:
			return fmt.Errorf("hold %q: unknown severity %q (want critical, warning or info, as severity=duration)", item, sev)
		}
		d, err := time.ParseDuration(strings.TrimSpace(ds))
		if !ok || err != nil {
			return fmt.Errorf("hold %q: want severity=duration, such as warning=10m", item)
		}
		if d < 0 || d > contract.MaxFor {
			return fmt.Errorf("hold %q: want 0 to %s", item, contract.MaxFor)
		}
		if _, dup := out[sev]; dup {
			return fmt.Errorf("hold %q: severity %s given twice", item, sev)
		}
		out[sev] = d
	}
	*h = out
	return nil
}

// UnmarshalText reads HANDOFF_NOTIFY_FOR.
func (h *Holds) UnmarshalText(b []byte) error { return h.Set(string(b)) }

// holdOf returns how long finding f must stay open before it pages: the
// contract's for when it sets one (0 included), else the hold of its
// severity (warning when it has none), else none.
func (c *Config) holdOf(f *detect.Finding) time.Duration {
	if f.HasFor {
		return f.For
	}
	sev := f.Severity
	if sev == "" {
		sev = contract.SeverityWarning
	}
	return c.For[sev]
}

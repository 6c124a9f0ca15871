package notify

import "github.com/prometheus/client_golang/prometheus"

// Metrics are notify's Prometheus metrics (handoff_notify_*).
type Metrics struct {
	Consumed     prometheus.Counter
	Delivered    *prometheus.CounterVec // by receiver kind, url
	Errors       *prometheus.CounterVec // failed attempts, by receiver kind, url (each is retried)
	DeadLetters  *prometheus.CounterVec // by receiver kind, url
	Open         prometheus.Gauge
	Held         prometheus.Gauge
	Skipped      prometheus.Counter
	Lag          prometheus.Gauge
	LastCommitTS prometheus.Gauge
	LastResendTS prometheus.Gauge
}

// NewMetrics creates the metrics and registers them on reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	rcv := []string{"receiver", "url"}
	m := &Metrics{
		Consumed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_notify_consumed_total", Help: "Finding records read from the findings topic (valid or dead-lettered).",
		}),
		Delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_notify_delivered_total", Help: "Finding records a receiver acknowledged (2xx), by receiver kind and URL.",
		}, rcv),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_notify_errors_total", Help: "Failed delivery attempts (retried with backoff), by receiver kind and URL; resends of open alerts included.",
		}, rcv),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_notify_dead_letters_total", Help: "Finding records a receiver did not take after the last retry, written to the dead-letter topic, by receiver kind and URL (receiver \"none\": a record that is not a finding).",
		}, rcv),
		Open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "handoff_notify_open_findings", Help: "Open findings whose alerts notify keeps firing (re-sent before their lease runs out).",
		}),
		Held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "handoff_notify_held_findings", Help: "Open findings waiting out their hold (the contract's for, or --for of their severity) before they page.",
		}),
		Skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_notify_skipped_total", Help: "Finding records delivered to no receiver because their finding was raised before the group's first start window (--since).",
		}),
		Lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "handoff_notify_consumer_lag", Help: "Finding records in the topic not yet delivered and committed, on the partitions read so far (the findings backlog).",
		}),
		LastCommitTS: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "handoff_notify_last_commit_timestamp_seconds", Help: "Unix time of the last offset commit, after delivery.",
		}),
		LastResendTS: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "handoff_notify_last_resend_timestamp_seconds", Help: "Unix time of the last round that sent every open alert to every Alertmanager successfully.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Consumed, m.Delivered, m.Errors, m.DeadLetters, m.Open, m.Held, m.Skipped, m.Lag, m.LastCommitTS, m.LastResendTS)
	}
	return m
}

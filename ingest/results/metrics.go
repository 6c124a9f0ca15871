package results

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the results consumer's Prometheus metrics. Their names start
// with handoff_ingest_results_, beside the events ingester's handoff_ingest_.
type Metrics struct {
	Stored       *prometheus.CounterVec // by topic
	Read         *prometheus.CounterVec // by topic
	Rejected     *prometheus.CounterVec // by topic, reason
	Lag          *prometheus.GaugeVec   // by topic
	Flushes      *prometheus.CounterVec // by trigger
	Errors       *prometheus.CounterVec // by stage
	LastCommitTS prometheus.Gauge
}

// NewMetrics creates the metrics and registers them on reg (when not nil).
func NewMetrics(reg prometheus.Registerer, topics []string) *Metrics {
	m := &Metrics{
		Read: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_ingest_results_read_total", Help: "Findings and diagnoses read from Kafka into the open batch, by topic (stored or dead-lettered at its next flush).",
		}, []string{"topic"}),
		Stored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_ingest_results_stored_total", Help: "Findings and diagnoses acknowledged by ClickHouse, by topic (redeliveries count again).",
		}, []string{"topic"}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_ingest_results_rejected_total", Help: "Findings and diagnoses dead-lettered, by topic and reason.",
		}, []string{"topic", "reason"}),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "handoff_ingest_results_consumer_lag", Help: "Records not yet stored and committed (high watermark minus committed offset) on this consumer's partitions, by topic.",
		}, []string{"topic"}),
		Flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_ingest_results_flushes_total", Help: "Batches of findings and diagnoses stored, by trigger (size, bytes, age, shutdown).",
		}, []string{"trigger"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_ingest_results_errors_total", Help: "Failed attempts (each is retried), by stage: fetch, insert, dead_letter_insert, dlq_write, commit.",
		}, []string{"stage"}),
		LastCommitTS: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "handoff_ingest_results_last_commit_timestamp_seconds", Help: "Unix time of the last offset commit of the results consumer.",
		}),
	}
	for _, t := range topics {
		m.Stored.WithLabelValues(t)
		m.Read.WithLabelValues(t)
		m.Lag.WithLabelValues(t)
	}
	for _, s := range []string{"fetch", "insert", "dead_letter_insert", "dlq_write", "commit"} {
		m.Errors.WithLabelValues(s)
	}
	for _, s := range []string{"size", "bytes", "age", "shutdown"} {
		m.Flushes.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.Read, m.Stored, m.Rejected, m.Lag, m.Flushes, m.Errors, m.LastCommitTS)
	}
	return m
}

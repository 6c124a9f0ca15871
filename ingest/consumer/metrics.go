package consumer

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the ingester's Prometheus metrics.
type Metrics struct {
	Consumed     prometheus.Counter
	Inserted     prometheus.Counter
	Rejected     *prometheus.CounterVec
	InsertTime   prometheus.Histogram
	Lag          prometheus.Gauge
	Flushes      *prometheus.CounterVec
	Errors       *prometheus.CounterVec
	Committed    prometheus.Counter
	LastCommitTS prometheus.Gauge
}

// NewMetrics creates the metrics and registers them on reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Consumed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_ingest_consumed_total", Help: "Messages read from the events topic and processed (valid or rejected).",
		}),
		Inserted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_ingest_inserted_total", Help: "Events inserted into ClickHouse (acknowledged; redeliveries count again).",
		}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_ingest_rejected_total", Help: "Messages rejected and dead-lettered, by reason.",
		}, []string{"reason"}),
		InsertTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "handoff_ingest_insert_seconds", Help: "Duration of successful event INSERTs into ClickHouse.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		Lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "handoff_ingest_consumer_lag", Help: "Messages in the events topic not yet stored and committed, summed over this ingester's partitions.",
		}),
		Flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_ingest_flushes_total", Help: "Batches flushed, by trigger (size: message count, bytes: message bytes, age, shutdown).",
		}, []string{"trigger"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_ingest_errors_total", Help: "Failed attempts (each is retried), by stage: fetch, insert, dead_letter_insert, dlq_write, commit.",
		}, []string{"stage"}),
		Committed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_ingest_committed_total", Help: "Messages whose offsets were committed after they were stored.",
		}),
		LastCommitTS: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "handoff_ingest_last_commit_timestamp_seconds", Help: "Unix time of the last successful offset commit.",
		}),
	}
	for _, r := range []string{"bad_json", "too_large", "unknown_type", "missing_field", "bad_value", "bad_spec"} {
		m.Rejected.WithLabelValues(r)
	}
	for _, s := range []string{"fetch", "insert", "dead_letter_insert", "dlq_write", "commit"} {
		m.Errors.WithLabelValues(s)
	}
	for _, s := range []string{"size", "bytes", "age", "shutdown"} {
		m.Flushes.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.Consumed, m.Inserted, m.Rejected, m.InsertTime, m.Lag, m.Flushes, m.Errors, m.Committed, m.LastCommitTS)
	}
	return m
}

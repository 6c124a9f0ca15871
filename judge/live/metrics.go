package live

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/judge/stream"
)

// Metrics are the detector's Prometheus metrics (handoff_detect_*).
type Metrics struct {
	folded      prometheus.Counter
	invalid     prometheus.Counter
	findings    prometheus.Counter
	byKind      *prometheus.CounterVec
	open        prometheus.Gauge
	closed      prometheus.Gauge
	armed       prometheus.Gauge
	suspended   prometheus.Gauge
	freshness   prometheus.Gauge
	lastAdvance prometheus.Gauge
	waiting     prometheus.Gauge
	lag         *prometheus.GaugeVec
	stages      *prometheus.HistogramVec
}

// Stages of the runner's own Advance, besides the member's (stream.Stage):
// judging (the detector's Advance and rendering its findings) and
// publishing them (until the brokers acknowledged).
const (
	StageJudge   stream.Stage = "judge"
	StagePublish stream.Stage = "publish"
)

// stageBuckets resolve the milliseconds a deadline's stages take, up to
// the seconds a stalled broker or a long catch-up can.
var stageBuckets = []float64{.0005, .001, .002, .003, .005, .0075, .01, .015, .02, .03, .05, .075, .1, .15, .2, .3, .5, 1, 2.5, 5}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		folded:      prometheus.NewCounter(prometheus.CounterOpts{Name: "handoff_detect_events_folded_total", Help: "Events folded into the detector's state."}),
		invalid:     prometheus.NewCounter(prometheus.CounterOpts{Name: "handoff_detect_events_invalid_total", Help: "Messages skipped as invalid events (handoff ingest dead-letters them)."}),
		findings:    prometheus.NewCounter(prometheus.CounterOpts{Name: "handoff_detect_findings_published_total", Help: "Finding records published to the findings topic."}),
		byKind:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "handoff_detect_findings_total", Help: "Finding records published, by kind and state (open or resolved)."}, []string{"kind", "state"}),
		open:        prometheus.NewGauge(prometheus.GaugeOpts{Name: "handoff_detect_open_batches", Help: "Batches whose folded state is held."}),
		closed:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "handoff_detect_closed_batches", Help: "Delivered batches remembered for continuity and redeliveries."}),
		armed:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "handoff_detect_armed_timers", Help: "Deadline timers armed."}),
		suspended:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "handoff_detect_suspended_batches", Help: "Reopened batches waiting for their stored history."}),
		freshness:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "handoff_detect_evidence_age_seconds", Help: "How far the watermark (every event in the topic at that time folded) is behind the clock."}),
		lastAdvance: prometheus.NewGauge(prometheus.GaugeOpts{Name: "handoff_detect_last_advance_timestamp_seconds", Help: "When the detector last advanced its clock (Unix seconds)."}),
		waiting:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "handoff_detect_waiting_for_ingest", Help: "1 while the detector waits for handoff ingest to store what it reads back."}),
		lag:         prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "handoff_detect_consumer_lag", Help: "Messages of the events topic not folded yet, per owned partition."}, []string{"partition"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "handoff_detect_stage_seconds",
			Help:    "Where the time from a deadline to its findings goes: fire (deadline to the detector waking), ends (reading the end offsets), reach (folding up to them), advance (judging and publishing), and, of every advance, judge and publish (when it published findings).",
			Buckets: stageBuckets}, []string{"stage"}),
	}
	if reg != nil {
		reg.MustRegister(m.folded, m.invalid, m.findings, m.byKind, m.open, m.closed, m.armed, m.suspended, m.freshness, m.lastAdvance, m.waiting, m.lag, m.stages)
	}
	return m
}

// Lag records one partition's lag (for stream.Member.OnLag).
func (m *Metrics) Lag(partition int, lag int64) {
	m.lag.WithLabelValues(strconv.Itoa(partition)).Set(float64(lag))
}

// assigned forgets the lag of the partitions of the previous assignment:
// a partition another member now reads would otherwise keep showing the
// lag it had here when it was taken away.
func (m *Metrics) assigned() { m.lag.Reset() }

// Stage records how long one stage took (for stream.Member.OnStage).
func (m *Metrics) Stage(s stream.Stage, d time.Duration) {
	m.stages.WithLabelValues(string(s)).Observe(d.Seconds())
}

// counted counts the findings of one advance.
func (m *Metrics) counted(f *detect.Finding) {
	m.findings.Inc()
	m.byKind.WithLabelValues(string(f.Kind), string(f.State)).Inc()
}

func (m *Metrics) observe(s detect.Stats, now, safe time.Time) {
	m.open.Set(float64(s.Open))
	m.closed.Set(float64(s.Closed))
	m.armed.Set(float64(s.Armed))
	m.suspended.Set(float64(s.Suspended))
	if !safe.IsZero() {
		m.freshness.Set(now.Sub(safe).Seconds())
	}
	m.lastAdvance.Set(float64(now.UnixMilli()) / 1000)
}

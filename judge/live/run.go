package live

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/judge/stream"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/replicas"
)

// RunOptions are what Run needs besides the configuration.
type RunOptions struct {
	Contracts detect.Contracts
	Logger    *slog.Logger
	Registry  prometheus.Registerer // nil: metrics not registered
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Started, when set, is called with the runner once it is built, so
	// tests can watch it.
	Started func(*Runner)
}

// Run runs one detector instance until ctx is done: it joins the
// detectors' consumer group on the events topic, publishes findings, and
// returns nil on cancellation.
func Run(ctx context.Context, cfg Config, o RunOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	from, err := cfg.ExpectFromDate(now())
	if err != nil {
		return err
	}
	var base *detect.Baselines
	if cfg.Baselines {
		lo, err := history.BaselineOptions()
		if err != nil {
			return err
		}
		base = &detect.Baselines{Options: lo}
	}
	d, err := detect.New(detect.Config{Contracts: o.Contracts, From: from, Retain: cfg.RetainDays, Baselines: base})
	if err != nil {
		return err
	}
	if err := topics.Ensure(ctx, cfg.Kafka.Brokers,
		topics.Spec{Name: cfg.Kafka.Topic, Partitions: cfg.Kafka.Partitions, ReplicationFactor: cfg.Kafka.Replication},
		topics.Spec{Name: cfg.FindingsTopic, Partitions: cfg.Kafka.Partitions, ReplicationFactor: cfg.Kafka.Replication}); err != nil {
		return fmt.Errorf("ensure the events and findings topics: %w", err)
	}
	chcfg := cfg.ClickHouse.Config()
	conn, err := chconn.Open(ctx, chcfg)
	if err != nil {
		return fmt.Errorf("ClickHouse (to read the stored history): %w", err)
	}
	defer conn.Close()
	st, err := history.New(conn, cfg.ClickHouse.Database)
	if err != nil {
		return err
	}
	var hist History = st
	if cfg.ClickHouse.Cluster != "" {
		set, err := replicas.New(conn, chcfg, cfg.ClickHouse.Cluster, cfg.ClickHouse.Database, log)
		if err != nil {
			return err
		}
		defer set.Close()
		hist = ClusterHistory{Replicas: set, Store: st}
	}
	pub := NewKafkaPublisher(cfg.Kafka.Brokers)
	pub.Log = log
	defer pub.Close()
	m := NewMetrics(o.Registry)
	r, err := New(Settings{
		EventsTopic:   cfg.Kafka.Topic,
		FindingsTopic: cfg.FindingsTopic,
		IngestGroup:   cfg.IngestGroup,
		ResultsGroup:  cfg.ResultsGroup,
		Retain:        cfg.RetainDays,
		Heartbeat:     cfg.Heartbeat,
		Instance:      cfg.Instance,
	}, Options{
		Detector:  d,
		History:   hist,
		Offsets:   KafkaOffsets{Client: &kafka.Client{Addr: kafka.TCP(cfg.Kafka.Brokers...), Timeout: 10 * time.Second}},
		Publisher: pub,
		Metrics:   m,
		Logger:    log,
		Now:       now,
	})
	if err != nil {
		return err
	}
	member, err := stream.NewMember(stream.Config{
		Brokers:        cfg.Kafka.Brokers,
		Topic:          cfg.Kafka.Topic,
		Group:          cfg.Group,
		SessionTimeout: cfg.SessionTimeout,
		Tick:           cfg.Tick,
		Logger:         log,
		Now:            now,
	})
	if err != nil {
		return err
	}
	member.OnLag(m.Lag)
	member.OnStage(m.Stage)
	if o.Started != nil {
		o.Started(r)
	}
	log.Info("detect: starting", "group", cfg.Group, "topic", cfg.Kafka.Topic, "findings_topic", cfg.FindingsTopic,
		"expect_from", from.String(), "instance", cfg.Instance)
	return member.Run(ctx, r)
}

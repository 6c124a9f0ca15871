// Package consumer is handoff's ingester: a Kafka consumer group on the
// events topic that decodes and validates each message with model, stores
// valid events in ClickHouse in batches and dead-letters the rest, and
// commits offsets only after ClickHouse (and the dead-letter topic) have
// acknowledged everything up to them.
//
// Delivery is at least once: a crash between the INSERT and the commit
// makes Kafka deliver the same messages again, and ClickHouse collapses the
// repeats because events are keyed by event_id (dead letters by source
// topic/partition/offset). Nothing is committed that is not stored.
package consumer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// Options are the non-configuration inputs of New.
type Options struct {
	Logger   *slog.Logger          // default: discard
	Registry prometheus.Registerer // where metrics are registered; nil: not registered
	// ClickHouseDial replaces the TCP dialer to ClickHouse (tests route it
	// through a proxy they can cut).
	ClickHouseDial func(ctx context.Context, addr string) (net.Conn, error)
}

// Consumer moves events from Kafka into ClickHouse. Create it with New, run
// it with Run, release it with Close.
type Consumer struct {
	cfg  Config
	log  *slog.Logger
	m    *Metrics
	conn chconn.Conn
	sink *writer.Sink
	// dialer connects to the brokers: the consumer group's coordinator
	// and the partitions' leaders.
	dialer *kafka.Dialer
	// grp is the consumer group membership while Run runs.
	grp *group
	dlq *kafka.Writer
	// dlqTransport is dlq's connection pool, closed with it; offsets
	// uses it too.
	dlqTransport *kafka.Transport
	// offsets reads the group's committed offsets before a commit.
	offsets *kafka.Client
	workers int

	// decode state, used by the decode stage only: one decoder per worker
	dec []model.Decoder
	// lag feeds the lag gauge (handoff_ingest_consumer_lag) from the
	// fetch loop and the store stage, on the partitions of the current
	// generation.
	lag *topics.Lag
	// inflight bounds the message bytes held from fetch to commit.
	inflight *budget
	// committed is the last offset committed per partition (store stage
	// only).
	committed map[int]int64
}

// New connects to ClickHouse (creating the schema when missing) and Kafka
// (creating the topics when missing); Run joins the consumer group. While
// a service is unreachable it retries with backoff until ctx is done.
func New(ctx context.Context, cfg Config, opts Options) (*Consumer, error) {
	if err := cfg.Validate(); err != nil { // the database name too
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 10 * time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	m := NewMetrics(opts.Registry)
	c := &Consumer{cfg: cfg, log: log, m: m, inflight: newBudget(inFlightBatches * int64(cfg.BatchBytes)),
		committed: map[int]int64{}}
	c.lag = topics.NewLag(func(_ string, n int64) { m.Lag.Set(float64(n)) }, cfg.Kafka.Topic)
	c.workers = cfg.Workers
	if c.workers <= 0 {
		c.workers = runtime.GOMAXPROCS(0)
	}
	c.dec = make([]model.Decoder, c.workers)

	err := c.retry(ctx, "startup", "connect to ClickHouse "+cfg.ClickHouse.Addr+" and ensure the schema", 0, func(ctx context.Context) error {
		conn, err := chconn.Open(ctx, chconn.Config{Addr: cfg.ClickHouse.Addr, User: cfg.ClickHouse.User, Password: cfg.ClickHouse.Password, Compression: cfg.Compression, Settings: cfg.querySettings(), Dial: opts.ClickHouseDial})
		if err != nil {
			return err
		}
		if err := schema.EnsureLayout(ctx, conn, cfg.ClickHouse.Database, cfg.Layout()); err != nil {
			conn.Close()
			return err
		}
		c.conn = conn
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.sink, _ = writer.New(c.conn, cfg.ClickHouse.Database)
	err = c.retry(ctx, "startup", "ensure Kafka topics "+cfg.Kafka.Topic+", "+cfg.DLQTopic, 0, func(ctx context.Context) error {
		return topics.Ensure(ctx, cfg.Kafka.Brokers,
			topics.Spec{Name: cfg.Kafka.Topic, Partitions: cfg.Kafka.Partitions, ReplicationFactor: cfg.Kafka.Replication},
			topics.Spec{Name: cfg.DLQTopic, Partitions: cfg.Kafka.Partitions, ReplicationFactor: cfg.Kafka.Replication})
	})
	if err != nil {
		c.conn.Close()
		return nil, err
	}
	// The group's and the fetchers' connections (the group itself is
	// joined by Run).
	c.dialer = &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, DialFunc: dialBuffered}
	// The DLQ writer has a connection pool of its own: kafka.DefaultTransport
	// is shared with every client in the process, and its cached metadata
	// and connection errors outlive a broker restart by its metadata TTL.
	c.dlqTransport = &kafka.Transport{}
	c.dlq = &kafka.Writer{
		Transport:    c.dlqTransport,
		Addr:         kafka.TCP(cfg.Kafka.Brokers...),
		Topic:        cfg.DLQTopic,
		Balancer:     &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    1000,
		BatchBytes:   topics.MaxBatchBytes, // what the topic accepts in one request
		MaxAttempts:  3,
		WriteTimeout: 30 * time.Second,
		ReadTimeout:  30 * time.Second,
	}
	c.offsets = &kafka.Client{Addr: kafka.TCP(cfg.Kafka.Brokers...), Timeout: 30 * time.Second, Transport: c.dlqTransport}
	return c, nil
}

// readBuffer is the read buffer of the fetchers' broker connections.
// kafka-go reads a fetch response through a 4 KiB bufio.Reader, which
// made one read system call per 4 KiB of messages (~12 per 1,000 events of
// ~300 bytes); a connection reading through a larger buffer serves those
// 4 KiB reads from memory.
const readBuffer = 256 << 10

// bufferedConn is a connection whose reads go through a readBuffer-sized
// buffer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// dialBuffered dials like kafka-go's default dialer and buffers the
// connection's reads (readBuffer).
func dialBuffered(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &bufferedConn{Conn: conn, r: bufio.NewReaderSize(conn, readBuffer)}, nil
}

// inFlightBatches is how many batches' worth of message bytes
// (Config.BatchBytes) the pipeline holds at most, from fetch to commit:
// enough for the stages to overlap (one being filled, one decoded, one
// stored) without holding batches beyond that.
const inFlightBatches = 4

// Metrics returns the consumer's metrics.
func (c *Consumer) Metrics() *Metrics { return c.m }

// Close releases the Kafka writer and the ClickHouse connection.
// Call it after Run returned.
func (c *Consumer) Close() error {
	var errs []error
	if c.dlq != nil {
		if err := c.dlq.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close DLQ writer: %w", err))
		}
		c.dlqTransport.CloseIdleConnections()
	}
	if c.conn != nil {
		if err := c.conn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close ClickHouse connection: %w", err))
		}
	}
	return errors.Join(errs...)
}

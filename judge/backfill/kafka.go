package backfill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
)

// DefaultTopic is the diagnoses topic that `handoff ingest` stores in
// diagnoses_v2 (ingest/results).
const DefaultTopic = "handoff.diagnoses"

// KafkaConfig configures a Publisher.
type KafkaConfig struct {
	Brokers []string
	Topic   string // default DefaultTopic
	// Partitions of the topic when it is created (default 6).
	Partitions int
	// InFlight is the most chunks being written at once (default 4): it
	// bounds the memory of diagnoses waiting for Kafka's acknowledgement.
	InFlight int
	// Timeout bounds each write (default 30s).
	Timeout time.Duration
}

// Publisher publishes chunks of diagnoses to a Kafka topic, each record
// keyed by its batch key (one batch's records share a partition) and
// acknowledged by every in-sync replica (acks=all). Records are compressed
// with LZ4: a diagnosis is a few KiB of repetitive JSON. Writes run
// concurrently, InFlight chunks at most; Publish blocks when that many are
// unacknowledged, so a slow broker slows the backfill instead of filling
// memory.
type Publisher struct {
	cfg   KafkaConfig
	w     *kafka.Writer
	slots chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex
	err   error // the first failed write
	acked int
}

// NewPublisher creates the topic when it is missing and returns a
// Publisher writing to it.
func NewPublisher(ctx context.Context, cfg KafkaConfig) (*Publisher, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("no Kafka brokers: set HANDOFF_KAFKA_BROKERS or --kafka-brokers (host:port[,...]), or use --dry-run")
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 6
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if err := topics.Ensure(ctx, cfg.Brokers, topics.Spec{Name: cfg.Topic, Partitions: cfg.Partitions}); err != nil {
		return nil, fmt.Errorf("diagnoses topic: %w", err)
	}
	w := &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Topic:        cfg.Topic,
		Balancer:     &kafka.Murmur2Balancer{}, // as emit and the Java clients: same key, same partition
		RequiredAcks: kafka.RequireAll,
		Compression:  kafka.Lz4,
		BatchSize:    2000,
		BatchBytes:   topics.MaxMessageBytes / 2,
		BatchTimeout: 5 * time.Millisecond,
		MaxAttempts:  5,
		WriteTimeout: cfg.Timeout,
		ReadTimeout:  cfg.Timeout,
	}
	return &Publisher{cfg: cfg, w: w, slots: make(chan struct{}, cfg.InFlight)}, nil
}

// Publish starts writing c (keys and values are kept until acknowledged:
// the caller must not reuse c). It returns the first error of an earlier
// write, if any, and otherwise nil once the write has started.
func (p *Publisher) Publish(ctx context.Context, c *Chunk) error {
	if err := p.failed(); err != nil {
		return err
	}
	msgs := make([]kafka.Message, c.Len())
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(c.Keys[i]), Value: c.Diagnosis(i)}
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.wg.Add(1)
	go func() {
		defer func() {
			<-p.slots
			p.wg.Done()
		}()
		err := p.w.WriteMessages(ctx, msgs...)
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("write %d diagnoses (%s .. %s) to Kafka topic %s at %s: %w (is the broker up? check HANDOFF_KAFKA_BROKERS; running the backfill again with the same --as-of is safe: a diagnosis is idempotent by batch and as-of)",
				len(msgs), c.Keys[0], c.Keys[len(c.Keys)-1], p.cfg.Topic, strings.Join(p.cfg.Brokers, ","), err)
		}
		if err == nil {
			p.acked += len(msgs)
		}
	}()
	return nil
}

func (p *Publisher) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Wait returns once every write started has ended: nil when every record
// was acknowledged, else the first error.
func (p *Publisher) Wait() error {
	p.wg.Wait()
	return p.failed()
}

// Acked returns how many records Kafka acknowledged.
func (p *Publisher) Acked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked
}

// Close waits for the writes and releases the writer.
func (p *Publisher) Close() error {
	err := p.Wait()
	if cerr := p.w.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close the Kafka writer: %w", cerr)
	}
	return err
}

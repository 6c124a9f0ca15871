// Package emit publishes delivery events to Kafka, for producer, exchange
// and consumer systems (and `handoff emit`). Events are completed (event_id,
// time and spec filled when absent), validated before anything is sent,
// encoded canonically (model.Event.AppendJSON) and keyed by batch
// (model.Event.PartitionKey), so one batch's events share a partition.
// Emit returns only after the brokers acknowledged every event (acks=all).
package emit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
)

// Config configures an Emitter.
type Config struct {
	Brokers []string
	Topic   string // default handoff.events
	// Timeout bounds each Emit: if the brokers have not acknowledged
	// every event by then, Emit fails (default 30s: a leader change after
	// a broker died takes Kafka's broker.session.timeout.ms, 9 s by
	// default, and emits wait it out).
	Timeout time.Duration
	// CreateTopic creates the topic on first use when it is missing, with
	// Partitions partitions (default 6) and ReplicationFactor (default 1).
	CreateTopic       bool
	Partitions        int
	ReplicationFactor int
	// Now is the clock used to fill absent times (default time.Now).
	Now func() time.Time
}

// DefaultTopic is the events topic.
const DefaultTopic = "handoff.events"

// Emitter publishes events. It is safe for concurrent use.
type Emitter struct {
	cfg Config
	w   *kafka.Writer
	tr  *kafka.Transport // w's, closed with it
	// topicMu guards topicReady: only a successful topic creation is
	// remembered, so a broker that was unreachable at the first Emit is
	// asked again at the next one.
	topicMu    sync.Mutex
	topicReady bool
}

// New returns an Emitter. It does not connect until the first Emit; it
// fails only on a bad configuration (broker addresses, topic name), which
// is the caller's input to fix.
func New(cfg Config) (*Emitter, error) {
	if err := topics.CheckBrokers(cfg.Brokers); err != nil {
		return nil, err
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if err := topics.CheckName(cfg.Topic); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 6
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// Its own connection pool, not kafka.DefaultTransport shared with
	// every other client in the process.
	// Metadata refreshed every 2 s (6 s by default): after a leader
	// change the writer finds the new leader sooner.
	tr := &kafka.Transport{MetadataTTL: 2 * time.Second}
	w := &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Topic:        cfg.Topic,
		Balancer:     &kafka.Murmur2Balancer{}, // Java clients' default: same key, same partition
		RequiredAcks: kafka.RequireAll,
		// LZ4, as the findings and diagnoses: a bulk emit (a backlog, a
		// test load) sends and replicates fewer bytes (generated events
		// shrink about fivefold; real checksums compress less) for little
		// CPU. Every Kafka client since 0.10 reads it.
		Compression:  kafka.Lz4,
		BatchTimeout: 2 * time.Millisecond,
		BatchSize:    10000,
		BatchBytes:   topics.MaxBatchBytes, // what the topic accepts in one request
		MaxAttempts:  5,
		WriteTimeout: cfg.Timeout,
		ReadTimeout:  cfg.Timeout,
		Transport:    tr,
	}
	return &Emitter{cfg: cfg, w: w, tr: tr}, nil
}

// Fill completes e the way the emitter does before validating: a UUIDv7
// event_id, the current time (UTC, milliseconds) and spec handoff/v1 when
// absent.
func Fill(e *model.Event, now time.Time) {
	if e.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			id = uuid.New()
		}
		e.ID = id.String()
	}
	if e.Time.IsZero() {
		e.Time = now.UTC().Truncate(time.Millisecond)
	} else {
		e.Time = e.Time.UTC().Truncate(time.Millisecond)
	}
	if e.Spec == "" {
		e.Spec = model.SpecV1
	}
}

// Prepare fills and validates events in place. The error names the first
// bad event by its position (from 1) and the field at fault.
func (em *Emitter) Prepare(events []model.Event) error {
	now := em.cfg.Now()
	for i := range events {
		Fill(&events[i], now)
		if err := events[i].Validate(); err != nil {
			return fmt.Errorf("event %d (%s): %w", i+1, describe(&events[i]), err)
		}
	}
	return nil
}

func describe(e *model.Event) string {
	if e.Type == "" {
		return "no type"
	}
	return string(e.Type) + " " + e.PartitionKey()
}

// Emit fills, validates and publishes events, and returns when the brokers
// acknowledged all of them. If any event is invalid nothing is sent. The
// caller's events are not modified.
func (em *Emitter) Emit(ctx context.Context, events ...model.Event) error {
	cp := append([]model.Event(nil), events...)
	return em.Send(ctx, cp)
}

// Send is Emit, filling the events in place so the caller learns the
// event ids and times given to them.
func (em *Emitter) Send(ctx context.Context, events []model.Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := em.Prepare(events); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, em.cfg.Timeout)
	defer cancel()
	if err := em.ensureTopic(ctx); err != nil {
		return err
	}
	msgs := make([]kafka.Message, len(events))
	for i := range events {
		msgs[i] = kafka.Message{Key: []byte(events[i].PartitionKey()), Value: events[i].AppendJSON(nil)}
	}
	// Written again until acknowledged or the timeout: an emit waits out
	// a leader change (topics.WriteAll).
	if err := topics.WriteAll(ctx, em.w, msgs, nil); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("Kafka %s did not acknowledge %d event(s) on topic %s within %v: %w (is the broker up? check HANDOFF_KAFKA_BROKERS)",
				strings.Join(em.cfg.Brokers, ","), len(events), em.cfg.Topic, em.cfg.Timeout, err)
		}
		return fmt.Errorf("write %d event(s) to Kafka topic %s at %s: %w (is the broker up? check HANDOFF_KAFKA_BROKERS; nothing was acknowledged, so emitting again with the same --event-id is safe)", len(events), em.cfg.Topic, strings.Join(em.cfg.Brokers, ","), err)
	}
	return nil
}

// ensureTopic creates the topic when CreateTopic is set and it has not
// been created (or found) yet by this emitter.
func (em *Emitter) ensureTopic(ctx context.Context) error {
	if !em.cfg.CreateTopic {
		return nil
	}
	em.topicMu.Lock()
	defer em.topicMu.Unlock()
	if em.topicReady {
		return nil
	}
	err := topics.Ensure(ctx, em.cfg.Brokers, topics.Spec{Name: em.cfg.Topic, Partitions: em.cfg.Partitions, ReplicationFactor: em.cfg.ReplicationFactor})
	if err != nil {
		return fmt.Errorf("%w (nothing was sent; the next emit tries again)", err)
	}
	em.topicReady = true
	return nil
}

// Close flushes and releases the Kafka writer.
func (em *Emitter) Close() error {
	err := em.w.Close()
	em.tr.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("close Kafka writer: %w", err)
	}
	return nil
}

// LineError is a bad line of JSON-lines input.
type LineError struct {
	Line int   // 1-based
	Err  error // why: a *model.ValidationError, or the line is too long
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ChunkLines is how many lines EmitLines validates before sending them.
const ChunkLines = 10000

// maxReported bounds how many bad lines one error lists.
const maxReported = 20

// EmitLines reads one JSON event per line from r (blank lines skipped),
// fills absent event_id/time/spec, validates, and publishes. Lines are sent
// in chunks of ChunkLines: if a chunk has a bad line, nothing of that chunk
// is sent and the error lists its bad lines (line numbers and reasons); an
// input of up to ChunkLines lines is therefore sent entirely or not at all.
// It returns how many events were acknowledged, and calls sent (when not
// nil) with each acknowledged chunk.
func (em *Emitter) EmitLines(ctx context.Context, r io.Reader, sent func([]model.Event)) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), model.MaxEventSize+1024)
	var (
		dec   model.Decoder
		chunk []model.Event
		bad   []error
		total int
		line  int
		// first line of the current chunk
		chunkStart = 1
	)
	now := em.cfg.Now()
	fill := func(e *model.Event) { Fill(e, now) }
	flush := func() error {
		if len(bad) > 0 {
			more := ""
			if len(bad) > maxReported {
				more = fmt.Sprintf(" (and %d more bad lines)", len(bad)-maxReported)
				bad = bad[:maxReported]
			}
			return fmt.Errorf("%d bad line(s), nothing of lines %d-%d sent%s: %w", len(bad), chunkStart, line, more, errors.Join(bad...))
		}
		if len(chunk) == 0 {
			return nil
		}
		if err := em.Send(ctx, chunk); err != nil {
			return err
		}
		total += len(chunk)
		if sent != nil {
			sent(chunk)
		}
		chunk = nil
		chunkStart = line + 1
		return nil
	}
	inChunk := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		e, err := dec.DecodeWith(b, fill)
		if err != nil {
			bad = append(bad, &LineError{Line: line, Err: err})
		} else {
			chunk = append(chunk, e)
		}
		inChunk++
		if inChunk >= ChunkLines {
			if err := flush(); err != nil {
				return total, err
			}
			inChunk = 0
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return total, fmt.Errorf("%w", &LineError{Line: line + 1, Err: fmt.Errorf("longer than the %d-byte event limit", model.MaxEventSize)})
		}
		return total, fmt.Errorf("read input after line %d: %w", line, err)
	}
	return total, flush()
}

// Package lineage brings OpenLineage run events in: from a Kafka topic
// (Bridge, a consumer group) or from a file of JSON lines (Lines), mapped
// through the contracts (model/openlineage) to handoff events, which go to
// the events topic like any other and are stored by `handoff ingest`.
// Invalid run events go to the dead-letter topic with the reason; run
// events of jobs no contract claims are counted and skipped (an OpenLineage
// topic carries every job of a scheduler, most of them not pipelines
// handoff watches). Offsets are committed only after the mapped events and
// the dead letters were acknowledged: nothing is lost, and a redelivered
// run event maps to the same event ids.
package lineage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
	ol "github.com/handoff-dev/handoff/model/openlineage"
	"github.com/handoff-dev/handoff/store/schema"
)

// Defaults.
const (
	DefaultTopic = "openlineage"
	DefaultGroup = "handoff-openlineage"
)

// Sink sends mapped events and returns once they are acknowledged;
// *emit.Emitter implements it.
type Sink interface {
	Send(ctx context.Context, events []model.Event) error
}

// Config configures a Bridge.
type Config struct {
	Brokers  []string
	Topic    string // the OpenLineage topic (default openlineage)
	Group    string // consumer group (default handoff-openlineage)
	DLQTopic string // dead letters (default handoff.events.dlq)
	// Partitions of topics created when missing (default 6).
	Partitions int
	// RetryEvery is how long to wait before retrying a failed send or
	// commit (default 1s).
	RetryEvery time.Duration
	Log        *slog.Logger
}

// Stats counts what a bridge or Lines did.
type Stats struct {
	Read     int64 // run events read
	Mapped   int64 // handoff events sent
	Rejected int64 // invalid run events (dead letters)
	Unmapped int64 // run events of jobs no contract claims
	// Nothing counts run events of a claimed job that prove no boundary
	// (RUNNING, OTHER, no eventType without output statistics of the
	// artifact): read, valid, and mapped to no event.
	Nothing int64
}

// Bridge consumes the OpenLineage topic.
type Bridge struct {
	cfg                              Config
	contracts                        ol.Contracts
	sink                             Sink
	log                              *slog.Logger
	read, mapped, rejected, unmapped atomic.Int64
	nothing                          atomic.Int64
}

// NewBridge returns a Bridge; it connects in Run.
func NewBridge(cfg Config, contracts ol.Contracts, s Sink) (*Bridge, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("openlineage: no Kafka brokers: set --kafka-brokers or HANDOFF_KAFKA_BROKERS")
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.DLQTopic == "" {
		cfg.DLQTopic = "handoff.events.dlq"
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 6
	}
	if cfg.RetryEvery <= 0 {
		cfg.RetryEvery = time.Second
	}
	if err := ol.CheckClaims(contracts); err != nil {
		return nil, err
	}
	b := &Bridge{cfg: cfg, contracts: contracts, sink: s, log: cfg.Log}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b, nil
}

// Stats returns the counts so far.
func (b *Bridge) Stats() Stats {
	return Stats{Read: b.read.Load(), Mapped: b.mapped.Load(), Rejected: b.rejected.Load(), Unmapped: b.unmapped.Load(), Nothing: b.nothing.Load()}
}

// Run consumes until ctx ends (then it returns nil).
func (b *Bridge) Run(ctx context.Context) error {
	if err := topics.Ensure(ctx, b.cfg.Brokers,
		topics.Spec{Name: b.cfg.Topic, Partitions: b.cfg.Partitions},
		topics.Spec{Name: b.cfg.DLQTopic, Partitions: b.cfg.Partitions}); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("openlineage: %w", err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: b.cfg.Brokers, GroupID: b.cfg.Group, Topic: b.cfg.Topic,
		MinBytes: 1, MaxBytes: 2 * topics.MaxMessageBytes, MaxWait: time.Second,
		CommitInterval: 0, StartOffset: kafka.FirstOffset, ReadLagInterval: -1,
	})
	defer r.Close()
	dlq := &kafka.Writer{Addr: kafka.TCP(b.cfg.Brokers...), Topic: b.cfg.DLQTopic, Balancer: &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, BatchBytes: 2 * topics.MaxMessageBytes}
	defer dlq.Close()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("openlineage: read %s: %w", b.cfg.Topic, err)
		}
		b.read.Add(1)
		events, dead := b.handle(m.Value)
		switch {
		case dead != nil:
			dead.Source = schema.Source{Topic: m.Topic, Partition: int32(m.Partition), Offset: m.Offset}
			dead.Key = string(m.Key)
			if !b.retry(ctx, "write dead letter", func(ctx context.Context) error {
				return dlq.WriteMessages(ctx, deadletter.Messages([]schema.DeadLetter{*dead})...)
			}) {
				return nil
			}
			b.rejected.Add(1)
		case len(events) > 0:
			if !b.retry(ctx, "send mapped events", func(ctx context.Context) error { return b.sink.Send(ctx, events) }) {
				return nil
			}
			b.mapped.Add(int64(len(events)))
		}
		if !b.retry(ctx, "commit", func(ctx context.Context) error { return r.CommitMessages(ctx, m) }) {
			return nil
		}
	}
}

// retry runs f until it succeeds; false when ctx ended first.
func (b *Bridge) retry(ctx context.Context, what string, f func(context.Context) error) bool {
	for {
		err := f(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		b.log.Warn("openlineage: "+what+" failed, retrying", "err", err, "in", b.cfg.RetryEvery)
		t := time.NewTimer(b.cfg.RetryEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// handle maps one message: events to send, or a dead letter.
func (b *Bridge) handle(value []byte) ([]model.Event, *schema.DeadLetter) {
	events, err := mapOne(value, b.contracts)
	if errors.Is(err, ol.ErrNoContract) {
		b.unmapped.Add(1)
		return nil, nil
	}
	if err != nil {
		return nil, &schema.DeadLetter{ReceivedMS: time.Now().UnixMilli(), Reason: rejectKind(err), Error: err.Error(), Payload: value}
	}
	if len(events) == 0 {
		b.nothing.Add(1)
	}
	return events, nil
}

func mapOne(value []byte, contracts ol.Contracts) ([]model.Event, error) {
	ev, err := ol.Decode(value)
	if err != nil {
		return nil, err
	}
	return ol.Map(&ev, contracts)
}

// rejectKind names a rejection with the dead-letter reasons handoff's
// ingester uses.
func rejectKind(err error) model.RejectKind {
	var oe *ol.Error
	if !errors.As(err, &oe) {
		return model.RejectBadValue
	}
	switch {
	case strings.HasPrefix(oe.Reason, "invalid JSON"), strings.HasPrefix(oe.Reason, "more than one"):
		return model.RejectBadJSON
	case strings.Contains(oe.Reason, "-byte limit"):
		return model.RejectTooLarge
	case strings.HasPrefix(oe.Reason, "missing"):
		return model.RejectMissingField
	}
	return model.RejectBadValue
}

// Lines maps a file of OpenLineage run events, one JSON object per line
// (OpenLineage's file transport), calling yield with each run event's
// handoff events and bad with each line that cannot be mapped (its number
// from 1 and the reason). Jobs no contract claims are counted, not bad. A
// line over the size limit is bad, skipped without being held in memory,
// and reading goes on with the next line.
func Lines(ctx context.Context, r io.Reader, contracts ol.Contracts, yield func([]model.Event) error, bad func(line int, err error)) (Stats, error) {
	var st Stats
	if err := ol.CheckClaims(contracts); err != nil {
		return st, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		text, size, err := readLine(br, &buf, ol.MaxSize)
		if err != nil && err != io.EOF {
			return st, fmt.Errorf("line %d: %w", line, err)
		}
		if size == 0 && err == io.EOF {
			return st, nil
		}
		switch text = bytes.TrimSpace(text); {
		case size > int64(ol.MaxSize):
			st.Read++
			st.Rejected++
			bad(line, &ol.Error{Field: "event", Reason: fmt.Sprintf("%d bytes, over the %d-byte limit (skipped)", size, ol.MaxSize)})
		case len(text) > 0:
			st.Read++
			events, merr := mapOne(text, contracts)
			switch {
			case errors.Is(merr, ol.ErrNoContract):
				st.Unmapped++
			case merr != nil:
				st.Rejected++
				bad(line, merr)
			case len(events) > 0:
				if err := yield(events); err != nil {
					return st, err
				}
				st.Mapped += int64(len(events))
			default:
				st.Nothing++
			}
		}
		if err == io.EOF {
			return st, nil
		}
	}
}

// readLine reads one line (without its newline) into *buf, keeping at
// most limit+1 bytes of it: size is the line's whole length, so a longer
// line is known as such without being held in memory. err is io.EOF at
// the end of the input (with the last line, when it has no newline).
func readLine(br *bufio.Reader, buf *[]byte, limit int) (line []byte, size int64, err error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		size += int64(len(chunk))
		if room := limit + 1 - len(*buf); room > 0 {
			*buf = append(*buf, chunk[:min(len(chunk), room)]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return *buf, size, err
		}
		// Not the newline itself in the size.
		size--
		b := bytes.TrimSuffix(*buf, []byte("\n"))
		return b, size, nil
	}
}

// Package sink writes delivery events and dead letters into ClickHouse. It
// is the only writer to handoff's tables.
//
// Rows are gathered column by column (EventBatch, DeadLetterBatch) and sent
// with PrepareBatch and an explicit column list, which works on ClickHouse
// 18.16 and on current releases. A batch can be sent again after a failure:
// its columns are kept until Reset.
package sink

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/model"
)

// Source says where an event or dead letter came from in Kafka.
type Source struct {
	Topic     string
	Partition int32
	Offset    int64
}

// EventColumns is the column list of every INSERT into events, in order.
const EventColumns = "pipeline, business_date, batch_id, event_id, spec, type, time_ms, system, component, object, " +
	"rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error, `attrs.key`, `attrs.value`, " +
	"ingested_ms, kafka_topic, kafka_partition, kafka_offset"

// DeadLetterColumns is the column list of every INSERT into dead_letters.
const DeadLetterColumns = "received_ms, topic, kafka_partition, kafka_offset, key, reason, error, payload"

// EventBatch holds events as ClickHouse columns, ready to insert.
type EventBatch struct {
	pipeline     []string
	businessDate []time.Time
	batchID      []string
	eventID      []string
	spec         []string
	typ          []string
	timeMS       []int64
	system       []string
	component    []string
	object       []string
	rows         []int64
	hasRows      []uint8
	bytes        []int64
	hasBytes     []uint8
	checksum     []string
	attempt      []int64
	hasAttempt   []uint8
	errText      []string
	attrKeys     [][]string
	attrValues   [][]string
	ingestedMS   []int64
	topic        []string
	partition    []int32
	offset       []int64
}

// Len returns the number of events in the batch.
func (b *EventBatch) Len() int { return len(b.eventID) }

// Reset empties the batch, keeping its memory.
func (b *EventBatch) Reset() {
	b.pipeline = b.pipeline[:0]
	b.businessDate = b.businessDate[:0]
	b.batchID = b.batchID[:0]
	b.eventID = b.eventID[:0]
	b.spec = b.spec[:0]
	b.typ = b.typ[:0]
	b.timeMS = b.timeMS[:0]
	b.system = b.system[:0]
	b.component = b.component[:0]
	b.object = b.object[:0]
	b.rows = b.rows[:0]
	b.hasRows = b.hasRows[:0]
	b.bytes = b.bytes[:0]
	b.hasBytes = b.hasBytes[:0]
	b.checksum = b.checksum[:0]
	b.attempt = b.attempt[:0]
	b.hasAttempt = b.hasAttempt[:0]
	b.errText = b.errText[:0]
	b.attrKeys = b.attrKeys[:0]
	b.attrValues = b.attrValues[:0]
	b.ingestedMS = b.ingestedMS[:0]
	b.topic = b.topic[:0]
	b.partition = b.partition[:0]
	b.offset = b.offset[:0]
}

var epochDate = time.Unix(0, 0).UTC()

// DateColumn returns the value stored in a Date column for d: midnight UTC,
// or 1970-01-01 for the zero Date (heartbeats).
func DateColumn(d model.Date) time.Time {
	if d.IsZero() {
		return epochDate
	}
	return d.In(time.UTC)
}

// DateFromColumn is the inverse of DateColumn.
func DateFromColumn(t time.Time) model.Date {
	if t.Year() == 1970 && t.Month() == 1 && t.Day() == 1 {
		return model.Date{}
	}
	return model.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}
}

func flag(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Add appends one event; ingestedMS is when the ingester received it.
func (b *EventBatch) Add(e *model.Event, src Source, ingestedMS int64) {
	b.pipeline = append(b.pipeline, e.Pipeline)
	b.businessDate = append(b.businessDate, DateColumn(e.BusinessDate))
	b.batchID = append(b.batchID, e.BatchID)
	b.eventID = append(b.eventID, e.ID)
	b.spec = append(b.spec, e.Spec)
	b.typ = append(b.typ, string(e.Type))
	b.timeMS = append(b.timeMS, e.TimeMillis())
	b.system = append(b.system, string(e.System))
	b.component = append(b.component, e.Component)
	b.object = append(b.object, e.Object)
	b.rows = append(b.rows, e.Rows)
	b.hasRows = append(b.hasRows, flag(e.HasRows))
	b.bytes = append(b.bytes, e.Bytes)
	b.hasBytes = append(b.hasBytes, flag(e.HasBytes))
	b.checksum = append(b.checksum, e.Checksum)
	b.attempt = append(b.attempt, e.Attempt)
	b.hasAttempt = append(b.hasAttempt, flag(e.HasAttempt))
	b.errText = append(b.errText, e.Error)
	keys := make([]string, 0, len(e.Attrs))
	vals := make([]string, 0, len(e.Attrs))
	if len(e.Attrs) > 0 {
		for k := range e.Attrs {
			keys = append(keys, k)
		}
		// Sorted so that equal attrs are equal columns; slices.Sort, not
		// an insertion sort: attrs come from untrusted input and may be
		// tens of thousands per event.
		slices.Sort(keys)
		for _, k := range keys {
			vals = append(vals, e.Attrs[k])
		}
	}
	b.attrKeys = append(b.attrKeys, keys)
	b.attrValues = append(b.attrValues, vals)
	b.ingestedMS = append(b.ingestedMS, ingestedMS)
	b.topic = append(b.topic, src.Topic)
	b.partition = append(b.partition, src.Partition)
	b.offset = append(b.offset, src.Offset)
}

func (b *EventBatch) columns() []any {
	return []any{
		b.pipeline, b.businessDate, b.batchID, b.eventID, b.spec, b.typ, b.timeMS, b.system, b.component, b.object,
		b.rows, b.hasRows, b.bytes, b.hasBytes, b.checksum, b.attempt, b.hasAttempt, b.errText, b.attrKeys, b.attrValues,
		b.ingestedMS, b.topic, b.partition, b.offset,
	}
}

// DeadLetter is one rejected message.
type DeadLetter struct {
	ReceivedMS int64
	Source     Source
	Key        string
	Reason     model.RejectKind
	Error      string
	Payload    []byte
}

// Sink inserts into one handoff database.
type Sink struct {
	conn driver.Conn
	db   string
}

// New returns a Sink writing to database db over conn. The schema must
// exist (schema.Ensure).
func New(conn driver.Conn, db string) (*Sink, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return nil, err
	}
	return &Sink{conn: conn, db: db}, nil
}

// Database returns the database the sink writes to.
func (s *Sink) Database() string { return s.db }

// InsertEvents inserts the batches in one INSERT. On error nothing may be
// assumed stored; sending the same batch again is safe because events
// are deduplicated by event_id.
func (s *Sink) InsertEvents(ctx context.Context, bs ...*EventBatch) error {
	p, err := s.PrepareEvents(ctx, bs...)
	if err != nil {
		return err
	}
	return p.Send()
}

// PreparedEvents is an INSERT of events whose block is built but not sent
// yet: building the block (copying every column into the driver's) can
// overlap the previous INSERT. Call Send or Abort exactly once.
type PreparedEvents struct {
	batch driver.Batch
	what  string
}

// PrepareEvents starts an INSERT of the batches and builds its block; ctx
// bounds the INSERT until Send returns. It returns nil and no error when
// the batches are empty (Send and Abort of nil do nothing).
func (s *Sink) PrepareEvents(ctx context.Context, bs ...*EventBatch) (*PreparedEvents, error) {
	n := 0
	var cols [][]any
	for _, b := range bs {
		if b.Len() > 0 {
			n += b.Len()
			cols = append(cols, b.columns())
		}
	}
	if n == 0 {
		return nil, nil
	}
	what := fmt.Sprintf("insert %d events into %s.%s", n, s.db, schema.Events)
	batch, err := s.prepare(ctx, schema.Events, EventColumns, cols...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &PreparedEvents{batch: batch, what: what}, nil
}

// Send sends the block and waits for ClickHouse's acknowledgement. On error
// nothing may be assumed stored.
func (p *PreparedEvents) Send() error {
	if p == nil {
		return nil
	}
	if err := p.batch.Send(); err != nil {
		return fmt.Errorf("%s: send: %w", p.what, err)
	}
	return nil
}

// Abort gives the INSERT up without sending it.
func (p *PreparedEvents) Abort() {
	if p != nil {
		_ = p.batch.Abort()
	}
}

// Events is a convenience that inserts events with no Kafka source.
func (s *Sink) Events(ctx context.Context, events []model.Event) error {
	var b EventBatch
	now := time.Now().UnixMilli()
	for i := range events {
		b.Add(&events[i], Source{}, now)
	}
	return s.InsertEvents(ctx, &b)
}

// InsertDeadLetters inserts rejected messages in one INSERT.
func (s *Sink) InsertDeadLetters(ctx context.Context, dls []DeadLetter) error {
	if len(dls) == 0 {
		return nil
	}
	n := len(dls)
	received := make([]int64, n)
	topic := make([]string, n)
	part := make([]int32, n)
	off := make([]int64, n)
	key := make([]string, n)
	reason := make([]string, n)
	errText := make([]string, n)
	payload := make([]string, n)
	for i, d := range dls {
		received[i] = d.ReceivedMS
		topic[i] = d.Source.Topic
		part[i] = d.Source.Partition
		off[i] = d.Source.Offset
		key[i] = d.Key
		reason[i] = string(d.Reason)
		errText[i] = d.Error
		payload[i] = string(d.Payload)
	}
	cols := []any{received, topic, part, off, key, reason, errText, payload}
	if err := s.send(ctx, schema.DeadLetters, DeadLetterColumns, cols); err != nil {
		return fmt.Errorf("insert %d dead letters into %s.%s: %w", n, s.db, schema.DeadLetters, err)
	}
	return nil
}

func (s *Sink) send(ctx context.Context, table, columns string, parts ...[]any) error {
	batch, err := s.prepare(ctx, table, columns, parts...)
	if err != nil {
		return err
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// prepare starts an INSERT and appends the columns (whole columns at once:
// the driver copies a []string column in one call).
func (s *Sink) prepare(ctx context.Context, table, columns string, parts ...[]any) (_ driver.Batch, err error) {
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.db+"."+table+" ("+columns+")")
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	for _, cols := range parts {
		for i, c := range cols {
			if err := batch.Column(i).Append(c); err != nil {
				_ = batch.Abort()
				return nil, fmt.Errorf("column %d: %w", i, err)
			}
		}
	}
	return batch, nil
}

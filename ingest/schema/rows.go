package schema

import (
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/model"
)

// The row mapping: Go values to the columns of columns.go and back. The
// *Rows types gather rows column by column (what PrepareBatch's
// Column(i).Append wants); their Columns method returns the columns in the
// order of the table's column list, so that order is kept in this file and
// columns.go only.

// Source says where an event, dead letter or result record came from in Kafka.
type Source struct {
	Topic     string
	Partition int32
	Offset    int64
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

// EventBatch holds events as the columns of EventColumns, ready to insert.
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
	// strs holds the strings AddView copies, reused after Reset.
	strs arena
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
	b.strs.reset()
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
		// many per event (model caps them at model.MaxAttrs).
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

// noAttrs is the attrs of an event without any (never appended to: its
// capacity is 0).
var noAttrs = []string{}

// AddView appends the event v decoded in place (model.Decoder.DecodeView),
// copying its strings into the batch's own buffers, which Reset reuses: no
// model.Event, attrs map or allocation per event on the ingest path. The
// columns are those Add writes for the same event (TestAddViewMatchesAdd).
// topic is kept as given (the consumer's topic name, shared by all rows).
func (b *EventBatch) AddView(v *model.EventView, src Source, ingestedMS int64) {
	e := &v.Event
	a := &b.strs
	b.pipeline = append(b.pipeline, a.copy(e.Pipeline))
	b.businessDate = append(b.businessDate, DateColumn(e.BusinessDate))
	b.batchID = append(b.batchID, a.copy(e.BatchID))
	b.eventID = append(b.eventID, a.copy(e.ID))
	spec := e.Spec
	if spec != model.SpecV1 { // a valid event has no other
		spec = a.copy(spec)
	}
	b.spec = append(b.spec, spec)
	b.typ = append(b.typ, string(e.Type)) // a constant of model
	b.timeMS = append(b.timeMS, e.TimeMillis())
	b.system = append(b.system, string(e.System)) // a constant of model
	b.component = append(b.component, a.copy(e.Component))
	b.object = append(b.object, a.copy(e.Object))
	b.rows = append(b.rows, e.Rows)
	b.hasRows = append(b.hasRows, flag(e.HasRows))
	b.bytes = append(b.bytes, e.Bytes)
	b.hasBytes = append(b.hasBytes, flag(e.HasBytes))
	b.checksum = append(b.checksum, a.copy(e.Checksum))
	b.attempt = append(b.attempt, e.Attempt)
	b.hasAttempt = append(b.hasAttempt, flag(e.HasAttempt))
	b.errText = append(b.errText, a.copy(e.Error))
	keys, vals := noAttrs, noAttrs
	if n := len(v.AttrKeys); n > 0 {
		// Already sorted by the decoder.
		keys, vals = make([]string, n), make([]string, n)
		for i, k := range v.AttrKeys {
			keys[i], vals[i] = a.copy(k), a.copy(v.AttrValues[i])
		}
	}
	b.attrKeys = append(b.attrKeys, keys)
	b.attrValues = append(b.attrValues, vals)
	b.ingestedMS = append(b.ingestedMS, ingestedMS)
	b.topic = append(b.topic, src.Topic)
	b.partition = append(b.partition, src.Partition)
	b.offset = append(b.offset, src.Offset)
}

// arenaChunk is the size of an arena's chunks: large enough that a batch
// of 50,000 events needs a few dozen, small enough that the last one,
// partly used, wastes little.
const arenaChunk = 256 << 10

// arena copies strings into large chunks of bytes that are reused after
// reset, so a batch's strings cost no allocation once the chunks exist.
// A string it returns is valid until reset: the batch's columns, which
// hold them, are reset at the same time.
type arena struct {
	chunks [][]byte
	n      int // chunks[:n] are in use, chunks[n-1] is being filled
}

func (a *arena) copy(s string) string {
	if len(s) == 0 {
		return ""
	}
	if a.n == 0 || len(a.chunks[a.n-1])+len(s) > cap(a.chunks[a.n-1]) {
		if a.n == len(a.chunks) || cap(a.chunks[a.n]) < len(s) {
			c := make([]byte, 0, max(arenaChunk, len(s)))
			if a.n == len(a.chunks) {
				a.chunks = append(a.chunks, c)
			} else {
				a.chunks[a.n] = c
			}
		}
		a.n++
	}
	c := &a.chunks[a.n-1]
	start := len(*c)
	*c = append(*c, s...)
	return unsafe.String(&(*c)[start], len(s))
}

func (a *arena) reset() {
	for i := range a.chunks[:a.n] {
		a.chunks[i] = a.chunks[i][:0]
	}
	a.n = 0
}

// Columns returns the batch's columns in the order of EventColumns.
func (b *EventBatch) Columns() []any {
	return []any{
		b.pipeline, b.businessDate, b.batchID, b.eventID, b.spec, b.typ, b.timeMS, b.system, b.component, b.object,
		b.rows, b.hasRows, b.bytes, b.hasBytes, b.checksum, b.attempt, b.hasAttempt, b.errText, b.attrKeys, b.attrValues,
		b.ingestedMS, b.topic, b.partition, b.offset,
	}
}

// EventScanner rebuilds events from rows selected with EventReadColumns,
// reusing its buffers between rows.
type EventScanner struct {
	bd                            time.Time
	typ, system                   string
	hasRows, hasBytes, hasAttempt uint8
	keys, vals                    []string
	ms                            int64
}

// Scan reads the current row into e (which it overwrites).
func (s *EventScanner) Scan(rows driver.Rows, e *model.Event) error {
	*e = model.Event{}
	s.keys, s.vals = s.keys[:0], s.vals[:0]
	if err := rows.Scan(&e.Pipeline, &s.bd, &e.BatchID, &e.ID, &e.Spec, &s.typ, &s.ms, &s.system, &e.Component, &e.Object,
		&e.Rows, &s.hasRows, &e.Bytes, &s.hasBytes, &e.Checksum, &e.Attempt, &s.hasAttempt, &e.Error, &s.keys, &s.vals); err != nil {
		return fmt.Errorf("scan %s row: %w", Events, err)
	}
	e.Time = time.UnixMilli(s.ms).UTC()
	e.Type = model.EventType(s.typ)
	e.System = model.System(s.system)
	e.HasRows, e.HasBytes, e.HasAttempt = s.hasRows != 0, s.hasBytes != 0, s.hasAttempt != 0
	e.BusinessDate = DateFromColumn(s.bd)
	if len(s.keys) > 0 {
		e.Attrs = make(map[string]string, len(s.keys))
		for i, k := range s.keys {
			if i < len(s.vals) {
				e.Attrs[k] = s.vals[i]
			}
		}
	}
	return nil
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

// DeadLetterColumnsOf returns dls as columns in the order of DeadLetterColumns.
func DeadLetterColumnsOf(dls []DeadLetter) []any {
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
	return []any{received, topic, part, off, key, reason, errText, payload}
}

// position is the columns every results row shares: where the batch is and
// where the record was read.
type position struct {
	pipeline     []string
	businessDate []time.Time
	batchID      []string
	batch        []string
	ingestedMS   []int64
	topic        []string
	partition    []int32
	offset       []int64
}

func (p *position) add(key model.BatchKey, src Source, ingestedMS int64) {
	p.pipeline = append(p.pipeline, key.Pipeline)
	p.businessDate = append(p.businessDate, DateColumn(key.BusinessDate))
	p.batchID = append(p.batchID, key.BatchID)
	p.batch = append(p.batch, key.String())
	p.ingestedMS = append(p.ingestedMS, ingestedMS)
	p.topic = append(p.topic, src.Topic)
	p.partition = append(p.partition, src.Partition)
	p.offset = append(p.offset, src.Offset)
}

// DiagnosisRow is one row of diagnoses_v2 (without the Kafka position,
// given to Add).
type DiagnosisRow struct {
	Key          model.BatchKey
	AsOfMS       int64
	Status       string
	Verdict      string
	FirstMissing string
	// Diagnosis is the analyzer's JSON, as received.
	Diagnosis string
}

// DiagnosisRows holds diagnoses as the columns of DiagnosisColumns. Rows
// are kept until Reset, so a failed INSERT can be sent again.
type DiagnosisRows struct {
	position
	asOfMS       []int64
	status       []string
	verdict      []string
	firstMissing []string
	json         []string
}

// Len returns the number of rows.
func (r *DiagnosisRows) Len() int { return len(r.asOfMS) }

// Add appends one row read from src at ingestedMS.
func (r *DiagnosisRows) Add(d DiagnosisRow, src Source, ingestedMS int64) {
	r.position.add(d.Key, src, ingestedMS)
	r.asOfMS = append(r.asOfMS, d.AsOfMS)
	r.status = append(r.status, d.Status)
	r.verdict = append(r.verdict, d.Verdict)
	r.firstMissing = append(r.firstMissing, d.FirstMissing)
	r.json = append(r.json, d.Diagnosis)
}

// Columns returns the rows' columns in the order of DiagnosisColumns.
func (r *DiagnosisRows) Columns() []any {
	return []any{r.pipeline, r.businessDate, r.batchID, r.batch, r.asOfMS, r.status, r.verdict, r.firstMissing, r.json,
		r.ingestedMS, r.topic, r.partition, r.offset}
}

// FindingRow is one row of findings_v2 (without the Kafka position, given
// to Add). Times are Unix milliseconds; 0 means none.
type FindingRow struct {
	Key            model.BatchKey
	Fingerprint    string
	Seq            uint32
	State          string // open or resolved
	Kind           string
	Name           string
	RaisedMS       int64
	ResolvedMS     int64
	DeadlineMS     int64
	LatenessMS     int64
	Severity       string
	Owner          string
	LabelKeys      []string // sorted
	LabelValues    []string
	EvidenceAsOfMS int64
	Status         string
	Verdict        string
	FirstMissing   string
	// Diagnosis is the embedded diagnosis JSON ("" when none).
	Diagnosis string
}

// FindingRows holds findings as the columns of FindingColumns.
type FindingRows struct {
	position
	fingerprint    []string
	seq            []uint32
	state          []string
	kind           []string
	name           []string
	raisedMS       []int64
	resolvedMS     []int64
	deadlineMS     []int64
	latenessMS     []int64
	severity       []string
	owner          []string
	labelKeys      [][]string
	labelValues    [][]string
	evidenceAsOfMS []int64
	status         []string
	verdict        []string
	firstMissing   []string
	diagnosis      []string
}

// Len returns the number of rows.
func (r *FindingRows) Len() int { return len(r.fingerprint) }

// Add appends one row read from src at ingestedMS.
func (r *FindingRows) Add(f FindingRow, src Source, ingestedMS int64) {
	r.position.add(f.Key, src, ingestedMS)
	r.fingerprint = append(r.fingerprint, f.Fingerprint)
	r.seq = append(r.seq, f.Seq)
	r.state = append(r.state, f.State)
	r.kind = append(r.kind, f.Kind)
	r.name = append(r.name, f.Name)
	r.raisedMS = append(r.raisedMS, f.RaisedMS)
	r.resolvedMS = append(r.resolvedMS, f.ResolvedMS)
	r.deadlineMS = append(r.deadlineMS, f.DeadlineMS)
	r.latenessMS = append(r.latenessMS, f.LatenessMS)
	r.severity = append(r.severity, f.Severity)
	r.owner = append(r.owner, f.Owner)
	keys, values := f.LabelKeys, f.LabelValues
	if keys == nil {
		keys, values = []string{}, []string{}
	}
	r.labelKeys = append(r.labelKeys, keys)
	r.labelValues = append(r.labelValues, values)
	r.evidenceAsOfMS = append(r.evidenceAsOfMS, f.EvidenceAsOfMS)
	r.status = append(r.status, f.Status)
	r.verdict = append(r.verdict, f.Verdict)
	r.firstMissing = append(r.firstMissing, f.FirstMissing)
	r.diagnosis = append(r.diagnosis, f.Diagnosis)
}

// Columns returns the rows' columns in the order of FindingColumns.
func (r *FindingRows) Columns() []any {
	return []any{r.pipeline, r.businessDate, r.batchID, r.batch, r.fingerprint, r.seq, r.state, r.kind, r.name,
		r.raisedMS, r.resolvedMS, r.deadlineMS, r.latenessMS, r.severity, r.owner, r.labelKeys, r.labelValues,
		r.evidenceAsOfMS, r.status, r.verdict, r.firstMissing, r.diagnosis, r.ingestedMS, r.topic, r.partition, r.offset}
}

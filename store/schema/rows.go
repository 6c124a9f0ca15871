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

// dateSeconds is DateColumn(d).Unix(), counted without time.Date.
func dateSeconds(d model.Date) int64 {
	if d.IsZero() {
		return 0
	}
	return int64(d.DaysSinceEpoch()) * 86400
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

// The string columns of EventBatch, in the order of EventColumns.
const (
	sPipeline = iota
	sBatchID
	sEventID
	sSpec
	sType
	sSystem
	sComponent
	sObject
	sChecksum
	sError
	sTopic
	nStr
)

// strRef is a string of an EventBatch: its bytes are text[off:off+n].
type strRef struct{ off, n uint32 }

// EventBatch holds events as the columns of EventColumns, ready to insert.
//
// It holds no pointer per row: strings are offsets into one buffer of the
// batch's text, dates are Unix seconds, attrs are offsets into flat lists.
// A batch of 50,000 events is then a few large pointer-free arrays, which
// the garbage collector does not scan and which Reset reuses; the Go
// values the driver wants ([]string, []time.Time, [][]string) are made
// block by block into ColumnBuffers (AppendColumns).
type EventBatch struct {
	text []byte
	strs [nStr][]strRef
	// dict holds, per column of a few distinct values (spec, type,
	// system, topic), the values seen in this batch: their text is stored
	// once.
	dict [nStr][]dictEntry

	businessDate []int64 // Unix seconds of DateColumn
	timeMS       []int64
	rows         []int64
	hasRows      []uint8
	bytes        []int64
	hasBytes     []uint8
	attempt      []int64
	hasAttempt   []uint8
	attrEnd      []uint32 // row i's attrs are attrKeys[attrEnd[i-1]:attrEnd[i]]
	attrKeys     []strRef
	attrValues   []strRef
	ingestedMS   []int64
	partition    []int32
	offset       []int64
}

type dictEntry struct {
	s   string
	ref strRef
}

// Len returns the number of events in the batch.
func (b *EventBatch) Len() int { return len(b.timeMS) }

// maxKeptText is the most text capacity Reset keeps: batches of large
// events (up to HANDOFF_BATCH_BYTES of text) give theirs back to the
// garbage collector instead of holding it while they wait to be reused.
const maxKeptText = 16 << 20

// Reset empties the batch, keeping its memory (text only up to
// maxKeptText).
func (b *EventBatch) Reset() {
	b.text = b.text[:0]
	if cap(b.text) > maxKeptText {
		b.text = nil
	}
	for i := range b.strs {
		b.strs[i] = b.strs[i][:0]
		b.dict[i] = b.dict[i][:0]
	}
	b.businessDate = b.businessDate[:0]
	b.timeMS = b.timeMS[:0]
	b.rows = b.rows[:0]
	b.hasRows = b.hasRows[:0]
	b.bytes = b.bytes[:0]
	b.hasBytes = b.hasBytes[:0]
	b.attempt = b.attempt[:0]
	b.hasAttempt = b.hasAttempt[:0]
	b.attrEnd = b.attrEnd[:0]
	b.attrKeys = b.attrKeys[:0]
	b.attrValues = b.attrValues[:0]
	b.ingestedMS = b.ingestedMS[:0]
	b.partition = b.partition[:0]
	b.offset = b.offset[:0]
}

// ref stores s in the batch's text.
func (b *EventBatch) ref(s string) strRef {
	r := strRef{off: uint32(len(b.text)), n: uint32(len(s))}
	b.text = append(b.text, s...)
	return r
}

// add appends s to string column c.
func (b *EventBatch) add(c int, s string) {
	b.strs[c] = append(b.strs[c], b.ref(s))
}

// addFew appends s to string column c, whose values are few (constants,
// the topic): each distinct value is stored once per batch.
func (b *EventBatch) addFew(c int, s string) {
	// The values are nearly always the very strings the dictionary keeps
	// (constants, the topic): compared by address first, the entries of
	// other values of the same length cost no byte comparison.
	dict := b.dict[c]
	for i := range dict {
		if unsafe.StringData(dict[i].s) == unsafe.StringData(s) && len(dict[i].s) == len(s) {
			b.strs[c] = append(b.strs[c], dict[i].ref)
			return
		}
	}
	for _, d := range dict {
		if d.s == s {
			b.strs[c] = append(b.strs[c], d.ref)
			return
		}
	}
	r := b.ref(s)
	if len(b.dict[c]) < 64 {
		// The dictionary keeps s: a constant, or the caller's string.
		b.dict[c] = append(b.dict[c], dictEntry{s: s, ref: r})
	}
	b.strs[c] = append(b.strs[c], r)
}

// Add appends one event; ingestedMS is when the ingester received it.
func (b *EventBatch) Add(e *model.Event, src Source, ingestedMS int64) {
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
	b.add1(e, keys, vals, src, ingestedMS)
}

// AddView appends the event v decoded in place (model.Decoder.DecodeView),
// copying its strings into the batch's buffers, which Reset reuses: no
// model.Event, attrs map or allocation per event on the ingest path. The
// columns are those Add writes for the same event (TestAddViewMatchesAdd).
func (b *EventBatch) AddView(v *model.EventView, src Source, ingestedMS int64) {
	b.add1(&v.Event, v.AttrKeys, v.AttrValues, src, ingestedMS) // attrs sorted by the decoder
}

func (b *EventBatch) add1(e *model.Event, keys, vals []string, src Source, ingestedMS int64) {
	b.add(sPipeline, e.Pipeline)
	b.businessDate = append(b.businessDate, dateSeconds(e.BusinessDate))
	b.add(sBatchID, e.BatchID)
	b.add(sEventID, e.ID)
	b.addFew(sSpec, e.Spec)
	b.addFew(sType, string(e.Type))
	b.timeMS = append(b.timeMS, e.TimeMillis())
	b.addFew(sSystem, string(e.System))
	b.add(sComponent, e.Component)
	b.add(sObject, e.Object)
	b.rows = append(b.rows, e.Rows)
	b.hasRows = append(b.hasRows, flag(e.HasRows))
	b.bytes = append(b.bytes, e.Bytes)
	b.hasBytes = append(b.hasBytes, flag(e.HasBytes))
	b.add(sChecksum, e.Checksum)
	b.attempt = append(b.attempt, e.Attempt)
	b.hasAttempt = append(b.hasAttempt, flag(e.HasAttempt))
	b.add(sError, e.Error)
	for i, k := range keys {
		b.attrKeys = append(b.attrKeys, b.ref(k))
		b.attrValues = append(b.attrValues, b.ref(vals[i]))
	}
	b.attrEnd = append(b.attrEnd, uint32(len(b.attrKeys)))
	b.ingestedMS = append(b.ingestedMS, ingestedMS)
	b.addFew(sTopic, src.Topic)
	b.partition = append(b.partition, src.Partition)
	b.offset = append(b.offset, src.Offset)
}

// ColumnBuffers holds the Go values of a block of an EventBatch's columns
// (AppendColumns), reused from block to block.
type ColumnBuffers struct {
	strs         [nStr][]string
	dates        []time.Time
	keys, values []string
	attrKeys     [][]string
	attrValues   [][]string
}

// noAttrs is the attrs of an event without any (never appended to: its
// capacity is 0).
var noAttrs = []string{}

// Columns returns the batch's columns in the order of EventColumns, in
// buffers of their own.
func (b *EventBatch) Columns() []any {
	return b.AppendColumns(new(ColumnBuffers), 0, b.Len())
}

// AppendColumns returns rows lo..hi-1 of the batch's columns in the order
// of EventColumns, made in buf: valid until buf is used again, and while
// the batch is unchanged (the strings point into the batch's text).
func (b *EventBatch) AppendColumns(buf *ColumnBuffers, lo, hi int) []any {
	for c := range b.strs {
		out := buf.strs[c][:0]
		for _, r := range b.strs[c][lo:hi] {
			out = append(out, b.str(r))
		}
		buf.strs[c] = out
	}
	buf.dates = buf.dates[:0]
	for _, sec := range b.businessDate[lo:hi] {
		buf.dates = append(buf.dates, time.Unix(sec, 0).UTC())
	}
	buf.keys, buf.values = buf.keys[:0], buf.values[:0]
	buf.attrKeys, buf.attrValues = buf.attrKeys[:0], buf.attrValues[:0]
	base, last := b.attrEndBefore(lo), b.attrEndBefore(hi)
	for i := base; i < last; i++ {
		buf.keys = append(buf.keys, b.str(b.attrKeys[i]))
		buf.values = append(buf.values, b.str(b.attrValues[i]))
	}
	prev := base
	for row := lo; row < hi; row++ {
		end := b.attrEnd[row]
		if end == prev {
			buf.attrKeys = append(buf.attrKeys, noAttrs)
			buf.attrValues = append(buf.attrValues, noAttrs)
			continue
		}
		i, j := int(prev-base), int(end-base)
		buf.attrKeys = append(buf.attrKeys, buf.keys[i:j:j])
		buf.attrValues = append(buf.attrValues, buf.values[i:j:j])
		prev = end
	}
	s := &buf.strs
	return []any{
		s[sPipeline], buf.dates, s[sBatchID], s[sEventID], s[sSpec], s[sType], b.timeMS[lo:hi], s[sSystem],
		s[sComponent], s[sObject], b.rows[lo:hi], b.hasRows[lo:hi], b.bytes[lo:hi], b.hasBytes[lo:hi],
		s[sChecksum], b.attempt[lo:hi], b.hasAttempt[lo:hi], s[sError], buf.attrKeys, buf.attrValues,
		b.ingestedMS[lo:hi], s[sTopic], b.partition[lo:hi], b.offset[lo:hi],
	}
}

// attrEndBefore returns where row lo's attrs start in attrKeys (for lo =
// Len(), where they end).
func (b *EventBatch) attrEndBefore(lo int) uint32 {
	if lo == 0 {
		return 0
	}
	return b.attrEnd[lo-1]
}

// str returns the string r of the batch's text, without copying it.
func (b *EventBatch) str(r strRef) string {
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&b.text[r.off], int(r.n))
}

// EventScanner rebuilds events from rows selected with EventReadColumns
// (or EventReplayColumns when ReplayOnly), reusing its buffers between rows:
// the driver scans into the scanner's own fields through one list of
// destinations built once, so that a row costs no allocation of its own
// beyond the driver's strings (a list of fresh pointers a row, and the
// event they pointed into, were a tenth of a backfill's read). A scanner
// must not be copied once it has scanned.
type EventScanner struct {
	// ReplayOnly scans rows of EventReplayColumns: spec is set to
	// model.SpecV1 and attrs are left empty.
	ReplayOnly bool

	row                           model.Event
	bd                            time.Time
	typ, system                   string
	hasRows, hasBytes, hasAttempt uint8
	keys, vals                    []string
	ms                            int64
	dest                          []any
}

// Scan reads the current row into e (which it overwrites).
func (s *EventScanner) Scan(rows driver.Rows, e *model.Event) error {
	if s.dest == nil {
		r := &s.row
		if s.ReplayOnly {
			s.dest = []any{&r.Pipeline, &s.bd, &r.BatchID, &r.ID, &s.typ, &s.ms, &s.system, &r.Component, &r.Object,
				&r.Rows, &s.hasRows, &r.Bytes, &s.hasBytes, &r.Checksum, &r.Attempt, &s.hasAttempt, &r.Error}
		} else {
			s.dest = []any{&r.Pipeline, &s.bd, &r.BatchID, &r.ID, &r.Spec, &s.typ, &s.ms, &s.system, &r.Component, &r.Object,
				&r.Rows, &s.hasRows, &r.Bytes, &s.hasBytes, &r.Checksum, &r.Attempt, &s.hasAttempt, &r.Error, &s.keys, &s.vals}
		}
	}
	s.keys, s.vals = s.keys[:0], s.vals[:0]
	if err := rows.Scan(s.dest...); err != nil {
		*e = model.Event{}
		return fmt.Errorf("scan %s row: %w", Events, err)
	}
	*e = s.row
	if s.ReplayOnly {
		e.Spec = model.SpecV1
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
	Key         model.BatchKey
	Fingerprint string
	Seq         uint32
	State       string // open or resolved
	Kind        string
	Name        string
	RaisedMS    int64
	ResolvedMS  int64
	DeadlineMS  int64
	LatenessMS  int64
	Severity    string
	Owner       string
	// Root is the fingerprint of the finding's incident (detect.Finding.Root).
	Root           string
	LabelKeys      []string // sorted
	LabelValues    []string
	EvidenceAsOfMS int64
	Status         string
	Verdict        string
	FirstMissing   string
	// Diagnosis is the embedded diagnosis JSON ("" when none).
	Diagnosis string

	// ReportingDelayMS, Resolution and SupersededBy say how a resolved
	// record ended when not the plain way (detect.Finding's fields of the
	// same names); 0, "" and "" otherwise.
	ReportingDelayMS int64
	Resolution       string
	SupersededBy     string

	// EventsPartition is the events topic's partition of the finding's
	// batch among EventsPartitions, as the detector that published the
	// record says (its header handoff-events-partition); 0 of 0 when not
	// known. Not part of the finding (detect.Finding): where its batch's
	// events are read from.
	EventsPartition, EventsPartitions int32
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
	root           []string
	labelKeys      [][]string
	labelValues    [][]string
	evidenceAsOfMS []int64
	status         []string
	verdict        []string
	firstMissing   []string
	diagnosis      []string

	delayMS      []int64
	resolution   []string
	supersededBy []string

	eventsPartition, eventsPartitions []int32
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
	r.root = append(r.root, f.Root)
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
	r.delayMS = append(r.delayMS, f.ReportingDelayMS)
	r.resolution = append(r.resolution, f.Resolution)
	r.supersededBy = append(r.supersededBy, f.SupersededBy)
	r.eventsPartition = append(r.eventsPartition, f.EventsPartition)
	r.eventsPartitions = append(r.eventsPartitions, f.EventsPartitions)
}

// Columns returns the rows' columns in the order of FindingColumns.
func (r *FindingRows) Columns() []any {
	return []any{r.pipeline, r.businessDate, r.batchID, r.batch, r.fingerprint, r.seq, r.state, r.kind, r.name,
		r.raisedMS, r.resolvedMS, r.deadlineMS, r.latenessMS, r.delayMS, r.resolution, r.supersededBy, r.severity, r.owner, r.root,
		r.labelKeys, r.labelValues, r.evidenceAsOfMS, r.status, r.verdict, r.firstMissing, r.diagnosis, r.ingestedMS, r.topic, r.partition, r.offset,
		r.eventsPartition, r.eventsPartitions}
}

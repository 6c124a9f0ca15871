package model

import (
	"strings"
	"time"
	"unsafe"
)

// SpecV1 is the value of the "spec" field of every v1 event.
const SpecV1 = "handoff/v1"

// MaxEventSize is the largest encoded event accepted (1 MiB). Larger
// messages are rejected and dead-lettered.
const MaxEventSize = 1 << 20

// EventType is the kind of a delivery event, such as "artifact.transferred".
type EventType string

// The event types of wire format v1.
const (
	JobStarted          EventType = "job.started"
	JobSucceeded        EventType = "job.succeeded"
	JobFailed           EventType = "job.failed"
	ArtifactStaged      EventType = "artifact.staged"
	ArtifactFinalized   EventType = "artifact.finalized"
	ArtifactTransferred EventType = "artifact.transferred"
	SignalPublished     EventType = "signal.published"
	SignalTransferred   EventType = "signal.transferred"
	SignalRestored      EventType = "signal.restored"
	BatchIdentified     EventType = "batch.identified"
	ConsumeStarted      EventType = "consume.started"
	ConsumeSucceeded    EventType = "consume.succeeded"
	ConsumeFailed       EventType = "consume.failed"
	ProcessHeartbeat    EventType = "process.heartbeat"
)

// EventTypes lists every known event type, boundary events in ladder order
// first.
var EventTypes = [...]EventType{
	JobSucceeded, ArtifactFinalized, SignalPublished, ArtifactTransferred,
	SignalTransferred, SignalRestored, BatchIdentified, ConsumeSucceeded,
	JobStarted, JobFailed, ArtifactStaged, ConsumeStarted, ConsumeFailed,
	ProcessHeartbeat,
}

// Index returns t's position in EventTypes, or -1 for an unknown type: a
// small dense key for tables indexed by type. A switch, not a loop over
// EventTypes: the replay calls it for every event and rule.
func (t EventType) Index() int {
	switch t {
	case JobSucceeded:
		return 0
	case ArtifactFinalized:
		return 1
	case SignalPublished:
		return 2
	case ArtifactTransferred:
		return 3
	case SignalTransferred:
		return 4
	case SignalRestored:
		return 5
	case BatchIdentified:
		return 6
	case ConsumeSucceeded:
		return 7
	case JobStarted:
		return 8
	case JobFailed:
		return 9
	case ArtifactStaged:
		return 10
	case ConsumeStarted:
		return 11
	case ConsumeFailed:
		return 12
	case ProcessHeartbeat:
		return 13
	}
	return -1
}

// LookupIndex is Index for a type known only at run time (a decoded
// event's, which the replay and the readers look up for every event): the
// length and the first byte pick the one candidate, compared once, where
// Index's switch compares names one after another. Index stays the
// switch: inlined, it folds away where the type is a constant.
func (t EventType) LookupIndex() int {
	if len(t) == 0 {
		return -1
	}
	i := -1
	switch c := t[0]; len(t) {
	case 10:
		i = indexIf(c == 'j', 9) // job.failed
	case 11:
		i = indexIf(c == 'j', 8) // job.started
	case 13:
		i = indexIf(c == 'j', 0) // job.succeeded
	case 14:
		i = indexIf(c == 'c', 12) // consume.failed
	case 15:
		switch c {
		case 'a':
			i = 10 // artifact.staged
		case 's':
			i = 5 // signal.restored
		case 'c':
			i = 11 // consume.started
		}
	case 16:
		switch c {
		case 's':
			i = 2 // signal.published
		case 'b':
			i = 6 // batch.identified
		}
	case 17:
		switch c {
		case 'c':
			i = 7 // consume.succeeded
		case 'p':
			i = 13 // process.heartbeat
		}
	case 18:
		switch c {
		case 'a':
			i = 1 // artifact.finalized
		case 's':
			i = 4 // signal.transferred
		}
	case 20:
		i = indexIf(c == 'a', 3) // artifact.transferred
	}
	if i < 0 {
		return -1
	}
	// A decoded type is mostly the constant itself (the same bytes):
	// then no compare is needed.
	if w := EventTypes[i]; (len(w) != len(t) || unsafe.StringData(string(w)) != unsafe.StringData(string(t))) && w != t {
		return -1
	}
	return i
}

func indexIf(ok bool, i int) int {
	if ok {
		return i
	}
	return -1
}

// Known reports whether t is a v1 event type.
func (t EventType) Known() bool { return t.Index() >= 0 }

// Proves returns the boundary an event of type t proves, or NoBoundary for
// context events (job.started, *.failed, artifact.staged, consume.started,
// process.heartbeat).
func (t EventType) Proves() Boundary {
	switch t {
	case JobSucceeded:
		return Produced
	case ArtifactFinalized:
		return Finalized
	case SignalPublished:
		return Signaled
	case ArtifactTransferred:
		return Transferred
	case SignalTransferred, SignalRestored:
		return SignalDelivered
	case BatchIdentified:
		return Identified
	case ConsumeSucceeded:
		return Consumed
	}
	return NoBoundary
}

// HasBatch reports whether events of type t carry a batch identity (all but
// process.heartbeat).
func (t EventType) HasBatch() bool { return t != ProcessHeartbeat }

// NeedsObject reports whether events of type t must name an object
// (artifact.* and signal.*).
func (t EventType) NeedsObject() bool {
	return strings.HasPrefix(string(t), "artifact.") || strings.HasPrefix(string(t), "signal.")
}

// NeedsRows reports whether events of type t must carry a row count.
func (t EventType) NeedsRows() bool { return t == ArtifactFinalized || t == ConsumeSucceeded }

// IsFailure reports whether t is a *.failed event, which must carry an error.
func (t EventType) IsFailure() bool { return strings.HasSuffix(string(t), ".failed") }

// IsSignal reports whether t is a signal.* event.
func (t EventType) IsSignal() bool { return strings.HasPrefix(string(t), "signal.") }

// IsArtifact reports whether t is an artifact.* event.
func (t EventType) IsArtifact() bool { return strings.HasPrefix(string(t), "artifact.") }

// System is the kind of system that emitted an event.
type System string

// The systems of wire format v1.
const (
	Producer System = "producer"
	Exchange System = "exchange"
	Consumer System = "consumer"
	Operator System = "operator"
)

// Known reports whether s is a v1 system.
func (s System) Known() bool {
	return s == Producer || s == Exchange || s == Consumer || s == Operator
}

// Event is one delivery event (wire format v1, docs/event-format.md).
//
// Optional numeric fields have a companion Has* flag, because zero rows is a
// valid count that must not be confused with "not stated".
type Event struct {
	Spec         string
	ID           string // event_id: the idempotency key
	Type         EventType
	Time         time.Time // UTC, truncated to the millisecond
	Pipeline     string
	BusinessDate Date // zero for process.heartbeat
	BatchID      string
	System       System
	Component    string
	Object       string
	Rows         int64
	HasRows      bool
	Bytes        int64
	HasBytes     bool
	Checksum     string
	Attempt      int64
	HasAttempt   bool
	Error        string
	// Attrs holds free-form attributes. String values are kept as they are;
	// other JSON values are kept as their compact JSON text. Unknown
	// top-level fields of the wire format land here too, unless attrs
	// already has that key.
	Attrs map[string]string
}

// Key returns the event's batch key. It is the zero BatchKey for heartbeats.
func (e *Event) Key() BatchKey {
	if !e.Type.HasBatch() {
		return BatchKey{}
	}
	return BatchKey{Pipeline: e.Pipeline, BusinessDate: e.BusinessDate, BatchID: e.BatchID}
}

// PartitionKey returns the Kafka message key for the event: the batch key,
// or "pipeline/component" for heartbeats, so one batch's events share a
// partition.
func (e *Event) PartitionKey() string {
	if !e.Type.HasBatch() {
		return e.Pipeline + "/" + e.Component
	}
	return e.Key().String()
}

// TimeMillis returns the event time in milliseconds since the Unix epoch.
func (e *Event) TimeMillis() int64 { return e.Time.UnixMilli() }

// BatchKey is the identity of a batch: pipeline + business_date + batch_id.
// It is written pipeline/business_date/batch_id.
type BatchKey struct {
	Pipeline     string
	BusinessDate Date
	BatchID      string
}

// String returns the key as pipeline/business_date/batch_id.
func (k BatchKey) String() string {
	b := make([]byte, 0, len(k.Pipeline)+len(k.BatchID)+12)
	b = append(b, k.Pipeline...)
	b = append(b, '/')
	b = k.BusinessDate.AppendFormat(b)
	b = append(b, '/')
	b = append(b, k.BatchID...)
	return string(b)
}

// IsZero reports whether k is the zero key.
func (k BatchKey) IsZero() bool { return k == BatchKey{} }

// Compare orders keys by pipeline, business date, then batch id; the order
// in which diagnoses are listed.
func (k BatchKey) Compare(o BatchKey) int {
	if c := strings.Compare(k.Pipeline, o.Pipeline); c != 0 {
		return c
	}
	if c := k.BusinessDate.Compare(o.BusinessDate); c != 0 {
		return c
	}
	return strings.Compare(k.BatchID, o.BatchID)
}

// ParseBatchKey parses pipeline/business_date/batch_id. The business date
// must lie in the storable range (MinBusinessDay..MaxBusinessDay), as the
// codec requires of an event's: a key outside it names no batch that can
// exist, and would be stored as another date.
func ParseBatchKey(s string) (BatchKey, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return BatchKey{}, &ValidationError{Field: "batch", Value: s, Reason: "want pipeline/business_date/batch_id", Kind: RejectBadValue}
	}
	if err := checkName("pipeline", parts[0]); err != nil {
		return BatchKey{}, err
	}
	d, err := ParseDate(parts[1])
	if err != nil {
		return BatchKey{}, &ValidationError{Field: "business_date", Value: parts[1], Reason: err.Error(), Kind: RejectBadValue}
	}
	if !dateStorable(d) {
		return BatchKey{}, badValue("business_date", parts[1], dateRangeReason)
	}
	if err := checkName("batch_id", parts[2]); err != nil {
		return BatchKey{}, err
	}
	return BatchKey{Pipeline: parts[0], BusinessDate: d, BatchID: parts[2]}, nil
}

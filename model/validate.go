package model

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// RejectKind classifies why a message was rejected. It is the "reason"
// label of the rejection metrics and of the dead-letter table.
type RejectKind string

// Rejection kinds.
const (
	RejectBadJSON      RejectKind = "bad_json"
	RejectTooLarge     RejectKind = "too_large"
	RejectUnknownType  RejectKind = "unknown_type"
	RejectMissingField RejectKind = "missing_field"
	RejectBadValue     RejectKind = "bad_value"
	RejectBadSpec      RejectKind = "bad_spec"
)

// ValidationError says which field of an event is wrong and why, for
// example: business_date "2026-13-01": month out of range.
type ValidationError struct {
	Field  string // wire name of the field, "" for the whole message
	Value  string // the offending value as received, possibly shortened
	Reason string
	Kind   RejectKind
}

func (e *ValidationError) Error() string {
	switch {
	case e.Field == "":
		return e.Reason
	case e.Value == "":
		return e.Field + ": " + e.Reason
	default:
		return e.Field + " " + strconv.Quote(e.Value) + ": " + e.Reason
	}
}

func missing(field string) *ValidationError {
	return &ValidationError{Field: field, Reason: "required field is missing", Kind: RejectMissingField}
}

func badValue(field, value, reason string) *ValidationError {
	if len(value) > 80 {
		value = value[:77] + "..."
	}
	return &ValidationError{Field: field, Value: value, Reason: reason, Kind: RejectBadValue}
}

// maxNameLen bounds identity fields, which end up in keys, file names and
// ClickHouse primary keys.
const maxNameLen = 256

// CheckName reports whether s can be a pipeline name or a batch id: not
// empty, at most 256 bytes of printable UTF-8, without '/' (the batch key
// separator) or white space. The *ValidationError it returns names field.
// Contracts use it to reject a pipeline that no event could carry.
func CheckName(field, s string) error { return checkName(field, s) }

// checkName validates a pipeline or batch id: non-empty, printable, without
// '/' (the batch key separator) or white space.
func checkName(field, s string) error {
	if s == "" {
		return missing(field)
	}
	if len(s) > maxNameLen {
		return badValue(field, s, fmt.Sprintf("longer than %d bytes", maxNameLen))
	}
	if !utf8.ValidString(s) {
		return badValue(field, s, "not valid UTF-8")
	}
	for _, r := range s {
		if r == '/' || r <= ' ' || r == 0x7f {
			return badValue(field, s, "must not contain '/', spaces or control characters")
		}
	}
	return nil
}

// Validate checks that e is a valid v1 event: required fields present, known
// type and system, and the per-type requirements of design.md section 3. It
// returns a *ValidationError naming the first bad field. Decode validates
// already; Validate is for events built in code, before they are emitted.
func (e *Event) Validate() error {
	switch {
	case e.Spec == "":
		return missing("spec")
	case e.Spec != SpecV1:
		return &ValidationError{Field: "spec", Value: e.Spec, Reason: "unsupported spec version (want " + SpecV1 + ")", Kind: RejectBadSpec}
	case e.ID == "":
		return missing("event_id")
	case len(e.ID) > maxNameLen:
		return badValue("event_id", e.ID, fmt.Sprintf("longer than %d bytes", maxNameLen))
	case e.Type == "":
		return missing("type")
	case !e.Type.Known():
		return &ValidationError{Field: "type", Value: string(e.Type), Reason: "unknown event type", Kind: RejectUnknownType}
	case e.Time.IsZero():
		return missing("time")
	}
	if err := checkName("pipeline", e.Pipeline); err != nil {
		return err
	}
	if e.System == "" {
		return missing("system")
	}
	if !e.System.Known() {
		return badValue("system", string(e.System), "unknown system (want producer, exchange, consumer or operator)")
	}
	if e.Type.HasBatch() {
		if e.BusinessDate.IsZero() {
			return missing("business_date")
		}
		if err := checkName("batch_id", e.BatchID); err != nil {
			return err
		}
	} else if e.Component == "" {
		// A heartbeat is keyed pipeline/component; without a component it
		// cannot say which process is alive.
		return missing("component")
	}
	if e.Type.NeedsObject() && e.Object == "" {
		return missing("object")
	}
	if e.Type.NeedsRows() && !e.HasRows {
		return missing("rows")
	}
	if e.HasRows && e.Rows < 0 {
		return badValue("rows", strconv.FormatInt(e.Rows, 10), "must not be negative")
	}
	if e.HasBytes && e.Bytes < 0 {
		return badValue("bytes", strconv.FormatInt(e.Bytes, 10), "must not be negative")
	}
	if e.HasAttempt && e.Attempt < 0 {
		return badValue("attempt", strconv.FormatInt(e.Attempt, 10), "must not be negative")
	}
	if e.Type.IsFailure() && e.Error == "" {
		return missing("error")
	}
	return nil
}

package model

import (
	"fmt"
	"strconv"
	"time"
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

// Bounds of what an event may carry, checked by Validate. ClickHouse 18.16
// stores a Date as days since 1970-01-01 and renders 1970-01-01..2105-12-31
// faithfully; its DateTime ends in February 2106. handoff stores event
// times as Int64 milliseconds with a DateTime derived from them, and
// heartbeats (which have no business date) with day 0, 1970-01-01. A date
// or time outside these bounds would be stored as another one, silently,
// so it is rejected instead.
const (
	// MinBusinessDay is the first business date accepted, 1970-01-02, in
	// days since 1970-01-01 (Date.DaysSinceEpoch). Day 0 marks heartbeats.
	MinBusinessDay = 1
	// MaxBusinessDay is the last business date accepted, 2105-12-31.
	MaxBusinessDay = 49672
	// MinTimeMillis is the earliest event time accepted,
	// 1970-01-01T00:00:00Z, in milliseconds since the Unix epoch.
	MinTimeMillis = 0
	// MaxTimeMillis is the latest event time accepted,
	// 2105-12-31T23:59:59.999Z.
	MaxTimeMillis = 4291747199999
)

// Caps on an event's attrs, counted after unknown top-level fields have
// joined them. Producers put a handful of attributes on an event; the caps
// keep a hostile or broken one from making every later step (sorting,
// storing, rendering) pay for tens of thousands.
const (
	// MaxAttrs is the most attrs an event may carry.
	MaxAttrs = 256
	// MaxAttrsBytes bounds the total length of an event's attr keys and
	// values, in bytes.
	MaxAttrsBytes = 64 << 10
)

// maxNameLen bounds identity fields, which end up in keys, file names and
// ClickHouse primary keys.
const maxNameLen = 256

// CheckName reports whether s can be a pipeline name or a batch id: not
// empty, at most 256 bytes of printable UTF-8, without '/' (the batch key
// separator), white space, C1 controls or bidirectional controls. The *ValidationError it returns names field.
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
	// Names are ASCII nearly always: byte by byte, the checks below are
	// c > ' ' (no space, no C0 control), c != '/' and c != DEL.
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if c <= ' ' || c == '/' || c == 0x7f {
			return badValue(field, s, "must not contain '/', spaces or control characters")
		}
	}
	if ascii {
		return nil
	}
	if !utf8.ValidString(s) {
		return badValue(field, s, "not valid UTF-8")
	}
	for _, r := range s {
		if r == '/' || r <= ' ' || IsControl(r) || IsBidiControl(r) {
			return badValue(field, s, "must not contain '/', spaces or control characters")
		}
	}
	return nil
}

// checkNameOf is checkName; plain says that s holds printable ASCII only,
// where the one byte checkName rejects besides '/' is the space: s is
// then passed eight bytes at a time, and checkName says what is wrong.
func checkNameOf(field, s string, plain bool) error {
	if !plain || s == "" || len(s) > maxNameLen || hasSpaceOrSlash(s) {
		return checkName(field, s)
	}
	return nil
}

// hasSpaceOrSlash reports whether s has a ' ' or a '/'.
func hasSpaceOrSlash(s string) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	// A zero byte of x with ' ' (or '/') xored away sets its top bit in
	// (y-ones) &^ y; borrows only start at a zero byte, so "any" is exact.
	for ; len(s) >= 8; s = s[8:] {
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		sp, sl := x^(ones*' '), x^(ones*'/')
		if ((sp-ones)&^sp|(sl-ones)&^sl)&tops != 0 {
			return true
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '/' {
			return true
		}
	}
	return false
}

// checkText validates a free-form identity field (event_id, component,
// object): no C0 or C1 control characters and no bidirectional controls,
// which a terminal or a page would act on instead of showing.
func checkText(field, s string) error {
	// ASCII byte by byte (the common case): only C0 controls and DEL.
	i := 0
	for ; i < len(s) && s[i] < utf8.RuneSelf; i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return badValue(field, s, "must not contain control characters")
		}
	}
	if i == len(s) {
		return nil
	}
	for _, r := range s[i:] {
		if IsControl(r) || IsBidiControl(r) {
			return badValue(field, s, "must not contain control characters")
		}
	}
	return nil
}

// Validate checks that e is a valid v1 event: required fields present, known
// type and system, the per-type requirements of docs/event-format.md, a
// business date and a time ClickHouse stores faithfully (MinBusinessDay..
// MaxBusinessDay, MinTimeMillis..MaxTimeMillis), and attrs within MaxAttrs
// and MaxAttrsBytes. The zero Time counts as missing. It returns a *ValidationError naming the first bad field. Decode validates
// already; Validate is for events built in code, before they are emitted.
func (e *Event) Validate() error { return e.validate(false) }

// validate is Validate; plain says that e's strings are known to hold
// printable ASCII only (the decoder's plain messages), so that the checks
// for control characters, which cannot fail on them, are skipped.
func (e *Event) validate(plain bool) error {
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
	case !timeStorable(e.Time):
		v := e.Time.UTC()
		s := string(AppendTime(nil, v))
		if y := v.Year(); y < 0 || y > 9999 {
			s = v.Format(time.RFC3339Nano)
		}
		return badValue("time", s, timeRangeReason)
	}
	if err := checkNameOf("pipeline", e.Pipeline, plain); err != nil {
		return err
	}
	if !plain {
		if err := checkText("event_id", e.ID); err != nil {
			return err
		}
		if err := checkText("component", e.Component); err != nil {
			return err
		}
		if err := checkText("object", e.Object); err != nil {
			return err
		}
	}
	if e.System == "" {
		return missing("system")
	}
	if !e.System.Known() {
		return badValue("system", string(e.System), "unknown system (want producer, exchange, consumer or operator)")
	}
	if !e.BusinessDate.IsZero() && !dateStorable(e.BusinessDate) {
		return badValue("business_date", e.BusinessDate.String(), dateRangeReason)
	}
	if e.Type.HasBatch() {
		if e.BusinessDate.IsZero() {
			return missing("business_date")
		}
		if err := checkNameOf("batch_id", e.BatchID, plain); err != nil {
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
	return checkAttrs(e.Attrs)
}

// checkAttrs applies MaxAttrs and MaxAttrsBytes.
func checkAttrs(attrs map[string]string) error {
	if len(attrs) > MaxAttrs {
		return tooManyAttrs(len(attrs))
	}
	n := 0
	for k, v := range attrs {
		n += len(k) + len(v)
	}
	if n > MaxAttrsBytes {
		return attrsTooLarge(n)
	}
	return nil
}

func attrsTooLarge(n int) *ValidationError {
	return &ValidationError{Field: "attrs", Reason: fmt.Sprintf("%d bytes of attr keys and values, over the limit of %d per event", n, MaxAttrsBytes), Kind: RejectBadValue}
}

func tooManyAttrs(n int) *ValidationError {
	return &ValidationError{Field: "attrs", Reason: fmt.Sprintf("%d attrs, over the limit of %d per event", n, MaxAttrs), Kind: RejectBadValue}
}

// The reasons for dates and times outside the bounds: what the bounds are
// and why, so that whoever reads the dead letter knows it is not a typo in
// the format.
const (
	dateRangeReason = "outside 1970-01-02..2105-12-31, the dates ClickHouse stores (1970-01-01 marks heartbeats)"
	timeRangeReason = "outside 1970-01-01T00:00:00Z..2105-12-31T23:59:59.999Z, the times ClickHouse stores"
)

// dateStorable reports whether d lies within MinBusinessDay..MaxBusinessDay
// (the dates compared field by field: Validate runs for every event, and
// DaysSinceEpoch goes through time.Date).
func dateStorable(d Date) bool {
	return d.Compare(Date{1970, 1, 2}) >= 0 && d.Compare(Date{2105, 12, 31}) <= 0
}

// CheckStorableTime returns nil when t lies within
// MinTimeMillis..MaxTimeMillis, else a *ValidationError naming field with
// the codec's reason, for records other than events (findings) whose
// times are stored the same way.
func CheckStorableTime(field string, t time.Time) error {
	if timeStorable(t) {
		return nil
	}
	return badValue(field, t.UTC().Format(time.RFC3339Nano), timeRangeReason)
}

// timeStorable reports whether t lies within MinTimeMillis..MaxTimeMillis.
func timeStorable(t time.Time) bool {
	ms := t.UnixMilli()
	return ms >= MinTimeMillis && ms <= MaxTimeMillis
}

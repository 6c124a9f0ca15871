package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// MaxRecordBytes is the largest finding or diagnosis record accepted. A
// diagnosis carries its batch's timeline, so it may be larger than an event
// (1 MiB); one over 4 MiB is a runaway timeline and is dead-lettered as
// too_large rather than held in memory and stored.
const MaxRecordBytes = 4 << 20

// Diagnosis is one record of the diagnoses topic as stored: the identity,
// the as-of time and the fields dashboards filter on, plus the JSON as
// received.
type Diagnosis struct {
	Key    model.BatchKey
	AsOfMS int64
	Summary
	// JSON is the record's value, unchanged.
	JSON string
}

// Summary is what the tables copy out of a diagnosis JSON.
type Summary struct {
	Status       string
	Verdict      string
	FirstMissing string
}

// diagnosisWire is the part of the analyzer's diagnosis JSON that ingest
// reads (replay.Diagnosis.AppendJSON writes it); other fields are kept in the
// stored JSON and ignored here.
type diagnosisWire struct {
	identityWire
	Status       *string `json:"status"`
	Verdict      *string `json:"verdict"`
	FirstMissing *string `json:"first_missing"`
	AsOf         *string `json:"as_of"`
}

// identityWire is the batch identity both records carry.
type identityWire struct {
	Batch        *string `json:"batch"`
	Pipeline     *string `json:"pipeline"`
	BusinessDate *string `json:"business_date"`
	BatchID      *string `json:"batch_id"`
}

// ParseDiagnosis decodes and validates a diagnoses-topic record: the
// identity (batch must be pipeline/business_date/batch_id), status, verdict,
// first_missing and as_of. Errors are *model.ValidationError naming the
// field.
func ParseDiagnosis(value []byte) (Diagnosis, error) {
	var w diagnosisWire
	if err := decode(value, &w); err != nil {
		return Diagnosis{}, err
	}
	key, err := identity(&w.identityWire)
	if err != nil {
		return Diagnosis{}, err
	}
	sum, err := summary("", &w)
	if err != nil {
		return Diagnosis{}, err
	}
	asOf, err := requiredTime("as_of", w.AsOf)
	if err != nil {
		return Diagnosis{}, err
	}
	return Diagnosis{Key: key, AsOfMS: asOf, Summary: sum, JSON: string(value)}, nil
}

// ParseFinding decodes a findings-topic record with the detector's own
// decoder (detect.ParseFinding: the format's one decoder, so a record is
// stored exactly when the detector, notify and a restore would read it),
// checks what storage needs on top (the record within MaxRecordBytes, seq
// within findings_v2's UInt32, every time within the storable range,
// model.CheckStorableTime) and returns its findings_v2 row
// (schema.FindingRowWith: the diagnosis column is the record's own
// diagnosis bytes when they are what the analyzer's encoder writes, which
// the decoder tells, and the diagnosis encoded again otherwise). Errors are *model.ValidationError naming the
// field, with the dead-letter reason as Kind.
func ParseFinding(value []byte) (schema.FindingRow, error) {
	if len(value) > MaxRecordBytes {
		return schema.FindingRow{}, tooLarge(len(value))
	}
	d, diagnosis, err := detect.ParseFindingCanonical(value)
	if err != nil {
		var fe *detect.FindingError
		if errors.As(err, &fe) {
			return schema.FindingRow{}, &model.ValidationError{Field: fe.Field, Reason: fe.Reason, Kind: fe.Kind}
		}
		return schema.FindingRow{}, &model.ValidationError{Reason: err.Error(), Kind: model.RejectBadJSON}
	}
	if d.Seq > math.MaxUint32 {
		return schema.FindingRow{}, badValue("seq", strconv.Itoa(d.Seq), fmt.Sprintf("over %d, the largest seq findings_v2 stores", uint32(math.MaxUint32)))
	}
	for _, t := range [...]struct {
		field string
		t     time.Time
	}{{"raised_at", d.RaisedAt}, {"resolved_at", d.ResolvedAt}, {"deadline", d.Deadline}, {"evidence_as_of", d.EvidenceAsOf}} {
		if t.t.IsZero() {
			continue
		}
		if err := model.CheckStorableTime(t.field, t.t); err != nil {
			return schema.FindingRow{}, err
		}
	}
	return schema.FindingRowWith(&d, diagnosis), nil
}

func tooLarge(n int) error {
	return &model.ValidationError{Reason: fmt.Sprintf("record of %d bytes is over the %d-byte limit", n, MaxRecordBytes), Kind: model.RejectTooLarge}
}

// decode unmarshals a record's value into w, classifying the failure: too
// large, not a JSON object (bad_json), a field of the wrong type
// (bad_value, naming the field).
func decode(value []byte, w any) error {
	if len(value) > MaxRecordBytes {
		return tooLarge(len(value))
	}
	v := bytes.TrimSpace(value)
	if len(v) == 0 || v[0] != '{' {
		return &model.ValidationError{Reason: "not a JSON object", Kind: model.RejectBadJSON}
	}
	return decodePrefixed("", v, w)
}

func decodePrefixed(prefix string, v []byte, w any) error {
	if err := json.Unmarshal(v, w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &model.ValidationError{Field: prefix + te.Field, Reason: "want a JSON " + jsonKind(te.Type.Kind().String()) + ", got " + te.Value, Kind: model.RejectBadValue}
		}
		return &model.ValidationError{Field: trimDot(prefix), Reason: "invalid JSON: " + err.Error(), Kind: model.RejectBadJSON}
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	}
	return "number"
}

func trimDot(s string) string {
	if s != "" && s[len(s)-1] == '.' {
		return s[:len(s)-1]
	}
	return s
}

// identity checks the batch identity fields and that batch is their key.
func identity(w *identityWire) (model.BatchKey, error) {
	batch, date := w.Batch, w.BusinessDate
	p, err := name("pipeline", w.Pipeline)
	if err != nil {
		return model.BatchKey{}, err
	}
	if date == nil || *date == "" {
		return model.BatchKey{}, missing("business_date")
	}
	d, err := model.ParseDate(*date)
	if err != nil {
		return model.BatchKey{}, badValue("business_date", *date, err.Error())
	}
	b, err := name("batch_id", w.BatchID)
	if err != nil {
		return model.BatchKey{}, err
	}
	key := model.BatchKey{Pipeline: p, BusinessDate: d, BatchID: b}
	if batch == nil || *batch == "" {
		return model.BatchKey{}, missing("batch")
	}
	if *batch != key.String() {
		return model.BatchKey{}, badValue("batch", *batch, "differs from pipeline/business_date/batch_id "+key.String())
	}
	return key, nil
}

// summary checks a diagnosis's status, verdict and first_missing against
// the analyzer's names: ingest and the analyzer ship in one binary, and an
// unknown status would silently fall out of every dashboard.
func summary(prefix string, w *diagnosisWire) (Summary, error) {
	s := Summary{Status: deref(w.Status), Verdict: deref(w.Verdict), FirstMissing: deref(w.FirstMissing)}
	if s.Status == "" {
		return s, missing(prefix + "status")
	}
	if err := checkStatus(prefix+"status", s.Status); err != nil {
		return s, err
	}
	if s.Verdict == "" {
		return s, missing(prefix + "verdict")
	}
	if err := checkVerdict(prefix+"verdict", s.Verdict); err != nil {
		return s, err
	}
	if s.FirstMissing != "" {
		if _, err := model.ParseBoundary(s.FirstMissing); err != nil {
			return s, badValue(prefix+"first_missing", s.FirstMissing, "want a boundary name (produced ... consumed) or \"\"")
		}
	}
	return s, nil
}

func checkStatus(field, s string) error {
	switch replay.Status(s) {
	case replay.StatusBroken, replay.StatusDelivered, replay.StatusFailed, replay.StatusLate, replay.StatusInProgress:
		return nil
	}
	return badValue(field, s, "want broken, delivered, failed, late or in_progress")
}

func checkVerdict(field, v string) error {
	if _, err := model.ParseHypothesis(v); err != nil {
		return badValue(field, v, "want delivered or a hypothesis (not_produced ... not_consumed)")
	}
	return nil
}

func name(field string, v *string) (string, error) {
	s := deref(v)
	if err := model.CheckName(field, s); err != nil {
		return "", err
	}
	return s, nil
}

func requiredTime(field string, v *string) (int64, error) {
	if v == nil || *v == "" {
		return 0, missing(field)
	}
	return optionalTime(field, v)
}

// optionalTime parses an RFC 3339 time into Unix milliseconds; absent,
// null or "" is 0 (none).
func optionalTime(field string, v *string) (int64, error) {
	if v == nil || *v == "" {
		return 0, nil
	}
	t, err := model.ParseTime(*v)
	if err != nil {
		return 0, badValue(field, *v, err.Error())
	}
	if t.Before(time.Unix(0, 0)) {
		return 0, badValue(field, *v, "before 1970")
	}
	return t.UnixMilli(), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func missing(field string) error {
	return &model.ValidationError{Field: field, Reason: "required field is missing", Kind: model.RejectMissingField}
}

func badValue(field, value, reason string) error {
	if len(value) > 80 {
		value = value[:77] + "..."
	}
	return &model.ValidationError{Field: field, Value: value, Reason: reason, Kind: model.RejectBadValue}
}

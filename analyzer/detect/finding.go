package detect

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// State is where a finding is in its lifecycle.
type State string

// Finding states, as Alertmanager knows them: an open finding fires until
// a resolved one with the same fingerprint ends it.
const (
	Open     State = "open"
	Resolved State = "resolved"
)

// Kind says what a finding is about. Besides the three below, every
// anomaly kind of the replay that breaks a batch is a finding kind of its
// own (row_mismatch, identity_mismatch, ...; see docs/detect.md).
type Kind string

// Finding kinds that are not anomaly kinds.
const (
	// Overdue: the batch's first missing required boundary is past its
	// deadline. Name is the boundary.
	Overdue Kind = "overdue"
	// Missing: the schedule expects the batch and it has no event at all by
	// its first deadline. Name is the verdict of a batch with no events
	// (not_produced under the full ladder).
	Missing Kind = "missing"
	// Failed: the step where the delivery stopped last reported *.failed.
	// Name is the first missing boundary.
	Failed Kind = "failed"
)

// Finding is one alertable condition of one batch, in the manner of an
// Alertmanager alert: its Fingerprint is the same for every record of the
// condition, from the first open record to the resolved one. Each record
// carries the batch's diagnosis at the moment it was emitted.
type Finding struct {
	// Fingerprint identifies the condition: Fingerprint(Batch, Kind, Name).
	Fingerprint string
	State       State
	Kind        Kind
	// Name is the boundary (overdue, failed), the verdict (missing), or ""
	// (anomaly kinds).
	Name  string
	Batch model.BatchKey
	// Status and Verdict are the diagnosis' at emission, repeated at the top
	// level for routing.
	Status  replay.Status
	Verdict string
	// Seq numbers the records of one fingerprint from 1: the open record,
	// each status change while open, the resolution. A consumer keeps the
	// record with the highest Seq.
	Seq int
	// RaisedAt is when the finding was opened (the detector's clock);
	// ResolvedAt when it was resolved, zero while open.
	RaisedAt   time.Time
	ResolvedAt time.Time
	// Deadline is the deadline the batch missed (overdue, missing); zero
	// for the other kinds.
	Deadline time.Time
	// Lateness is how late the batch is or was: for a resolved overdue
	// finding, proven_at - deadline of the boundary; for a resolved missing
	// finding, first event - deadline; while open, EvidenceAsOf - deadline.
	// Zero for the other kinds. Never negative: see ReportingDelay.
	Lateness time.Duration
	// ReportingDelay is set on a resolved overdue or missing record whose
	// evidence was on time by its own event time but reached the detector
	// after the deadline: how long after that event time the detector
	// folded it (the evaluation's EvidenceAsOf minus the event time).
	// Lateness is then 0.
	ReportingDelay time.Duration
	// Resolution says in words how a resolved record ended when it did not
	// end the plain way: "on time (...), reported late by 7m", or
	// "superseded by <batch>" when another attempt of the date speaks for
	// it. "" otherwise, and on open records.
	Resolution string
	// SupersededBy is the attempt (a batch key) that replaced this one,
	// on a record resolved because another attempt of the date speaks for
	// it; "" otherwise.
	SupersededBy string
	// EvidenceAsOf is the safe time of the evaluation: every event that was
	// in the topic at that time had been folded. The diagnosis is as of it.
	EvidenceAsOf time.Time
	// Severity, Owner and Labels come from the pipeline's contract.
	Severity string
	Owner    string
	Labels   map[string]string
	// For is the contract's hold before paging (its for), when HasFor:
	// notify pages for the finding only once it has been open that long.
	For    time.Duration
	HasFor bool
	// Root is the fingerprint of the incident the finding belongs to
	// (RootFingerprint of RootBatch): the root of the chain of upstream
	// batches that blocks this one, or this batch itself when nothing
	// upstream blocks it. Findings with one Root are one incident: notify
	// pages for the root's own findings only. The JSON carries it for a
	// blocked finding only; ParseFinding fills in the batch's own incident
	// otherwise.
	Root string
	// RootBatch is the root batch's key ("pipeline/date/batch_id").
	RootBatch string
	// Diagnosis is the batch's diagnosis as of EvidenceAsOf.
	Diagnosis replay.Diagnosis
}

// RootFingerprint is the fingerprint of the incident rooted at batch k:
// Fingerprint(k, "incident", ""). It depends on the batch alone, so every
// finding blocked by k, on any detector instance, names the same one.
func RootFingerprint(k model.BatchKey) string { return Fingerprint(k, "incident", "") }

// IsBlocked reports whether the finding's batch is blocked by an upstream
// batch (its diagnosis names the cause): it belongs to the incident of
// another batch.
func (f *Finding) IsBlocked() bool { return f.Diagnosis.Blocked != nil }

// Fingerprint returns the fingerprint of the condition (kind, name) of
// batch k: 16 hex digits of the 64-bit FNV-1a hash of
// "pipeline/business_date/batch_id|kind|name". It depends on nothing else,
// so a restarted or another detector instance computes the same one.
func Fingerprint(k model.BatchKey, kind Kind, name string) string {
	return fmtFingerprint(fingerprint(k, kind, name))
}

func fingerprint(k model.BatchKey, kind Kind, name string) uint64 {
	// On the stack, and FNV-1a inline: a takeover checks the fingerprint
	// of every finding it restores (hundreds of thousands).
	var buf [96]byte
	b := append(buf[:0], k.Pipeline...)
	b = append(b, '/')
	b = k.BusinessDate.AppendFormat(b)
	b = append(b, '/')
	b = append(b, k.BatchID...)
	b = append(b, '|')
	b = append(b, kind...)
	b = append(b, '|')
	b = append(b, name...)
	h := uint64(fnvOffset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// The 64-bit FNV-1a parameters (hash/fnv's).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fmtFingerprint(fp uint64) string {
	var b [16]byte
	return string(appendFingerprint(b[:0], fp))
}

// appendFingerprint appends fp as fmtFingerprint writes it: 16 hex
// digits, zero-padded.
func appendFingerprint(b []byte, fp uint64) []byte {
	const hex = "0123456789abcdef"
	for i := 60; i >= 0; i -= 4 {
		b = append(b, hex[fp>>uint(i)&0xf])
	}
	return b
}

// AppendJSON appends the finding as one compact JSON object (the record of
// the findings topic). Field names are snake_case; times are RFC 3339 UTC
// with milliseconds; resolved_at and deadline are left out when zero;
// labels are written in key order; diagnosis is the replay's diagnosis
// JSON, unchanged.
func (f *Finding) AppendJSON(b []byte) []byte {
	b = append(b, `{"fingerprint":`...)
	b = model.AppendJSONString(b, f.Fingerprint)
	for _, kv := range [...]struct{ k, v string }{
		{"state", string(f.State)}, {"kind", string(f.Kind)}, {"name", f.Name},
		{"batch", f.Batch.String()}, {"pipeline", f.Batch.Pipeline}, {"business_date", f.Batch.BusinessDate.String()},
		{"batch_id", f.Batch.BatchID}, {"status", string(f.Status)}, {"verdict", f.Verdict},
	} {
		b = appendKey(b, kv.k)
		b = model.AppendJSONString(b, kv.v)
	}
	b = appendKey(b, "seq")
	b = strconv.AppendInt(b, int64(f.Seq), 10)
	for _, kv := range [...]struct {
		k string
		t time.Time
	}{{"raised_at", f.RaisedAt}, {"resolved_at", f.ResolvedAt}, {"deadline", f.Deadline}, {"evidence_as_of", f.EvidenceAsOf}} {
		if kv.t.IsZero() {
			continue
		}
		b = appendKey(b, kv.k)
		b = append(b, '"')
		b = model.AppendTime(b, kv.t)
		b = append(b, '"')
	}
	b = appendKey(b, "lateness_ms")
	b = strconv.AppendInt(b, f.Lateness.Milliseconds(), 10)
	if f.ReportingDelay != 0 {
		b = appendKey(b, "reporting_delay_ms")
		b = strconv.AppendInt(b, f.ReportingDelay.Milliseconds(), 10)
	}
	if f.Resolution != "" {
		b = appendKey(b, "resolution")
		b = model.AppendJSONString(b, f.Resolution)
	}
	if f.SupersededBy != "" {
		b = appendKey(b, "superseded_by")
		b = model.AppendJSONString(b, f.SupersededBy)
	}
	if f.Root != "" && f.RootBatch != f.Batch.String() {
		// Written for a blocked finding only: any other is its own
		// incident, which a reader derives from the batch (ParseFinding).
		b = appendKey(b, "root")
		b = model.AppendJSONString(b, f.Root)
		b = appendKey(b, "root_batch")
		b = model.AppendJSONString(b, f.RootBatch)
	}
	b = appendKey(b, "severity")
	b = model.AppendJSONString(b, f.Severity)
	b = appendKey(b, "owner")
	b = model.AppendJSONString(b, f.Owner)
	if f.HasFor {
		b = appendKey(b, "for_ms")
		b = strconv.AppendInt(b, f.For.Milliseconds(), 10)
	}
	b = appendKey(b, "labels")
	b = append(b, '{')
	names := make([]string, 0, len(f.Labels))
	for k := range f.Labels {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, k := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = model.AppendJSONString(b, k)
		b = append(b, ':')
		b = model.AppendJSONString(b, f.Labels[k])
	}
	b = append(b, '}')
	b = appendKey(b, "diagnosis")
	b = f.Diagnosis.AppendJSON(b)
	return append(b, '}')
}

func appendKey(b []byte, k string) []byte {
	b = append(b, ',', '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

// MarshalJSON implements json.Marshaler with AppendJSON.
func (f Finding) MarshalJSON() ([]byte, error) { return f.AppendJSON(nil), nil }

// wireFinding is the JSON form ParseFinding reads; pointers tell an absent
// field from a zero one.
type wireFinding struct {
	Fingerprint  *string           `json:"fingerprint"`
	State        *string           `json:"state"`
	Kind         *string           `json:"kind"`
	Name         *string           `json:"name"`
	Batch        *string           `json:"batch"`
	Pipeline     *string           `json:"pipeline"`
	BusinessDate *string           `json:"business_date"`
	BatchID      *string           `json:"batch_id"`
	Status       string            `json:"status"`
	Verdict      string            `json:"verdict"`
	Seq          *int              `json:"seq"`
	RaisedAt     *string           `json:"raised_at"`
	ResolvedAt   *string           `json:"resolved_at"`
	Deadline     *string           `json:"deadline"`
	EvidenceAsOf *string           `json:"evidence_as_of"`
	LatenessMs   *int64            `json:"lateness_ms"`
	DelayMs      int64             `json:"reporting_delay_ms"`
	Resolution   string            `json:"resolution"`
	SupersededBy string            `json:"superseded_by"`
	Severity     string            `json:"severity"`
	Owner        string            `json:"owner"`
	Labels       map[string]string `json:"labels"`
	ForMs        *int64            `json:"for_ms"`
	Root         string            `json:"root"`
	RootBatch    string            `json:"root_batch"`
	Diagnosis    json.RawMessage   `json:"diagnosis"`
}

// wireValues holds what wireFinding points to, when the record is read
// by replay.WireReader: has says which of the optional fields were there.
type wireValues struct {
	fingerprint, state, kind, name, batch, pipeline, businessDate, batchID, status, verdict string
	raisedAt, resolvedAt, deadline, evidenceAsOf                                            string
	resolution, supersededBy, root, rootBatch, severity, owner                              string
	seq                                                                                     int
	lateness, delay, forMs                                                                  int64
	labels                                                                                  map[string]string
	has                                                                                     uint8
}

// The optional fields of wireValues.
const (
	hasRaised = 1 << iota
	hasResolved
	hasDeadline
	hasEvidence
	hasFor
)

// read reads s when it is in the layout AppendJSON writes, the
// diagnosis into d, and returns the diagnosis's JSON and whether it was
// (false: s is to be read by encoding/json). Each field is read as
// encoding/json reads it into wireFinding; the diagnosis is canonical
// (replay.DecodeCanonicalJSON).
func (v *wireValues) read(s string, d *replay.Diagnosis) (string, bool) {
	r := replay.WireReader{S: s}
	for _, f := range [...]struct {
		k string
		v *string
	}{{`{"fingerprint":`, &v.fingerprint}, {`,"state":`, &v.state}, {`,"kind":`, &v.kind}, {`,"name":`, &v.name},
		{`,"batch":`, &v.batch}, {`,"pipeline":`, &v.pipeline}, {`,"business_date":`, &v.businessDate},
		{`,"batch_id":`, &v.batchID}, {`,"status":`, &v.status}, {`,"verdict":`, &v.verdict}} {
		r.Lit(f.k)
		*f.v = r.Str()
	}
	r.Lit(`,"seq":`)
	seq := r.Int()
	if v.seq = int(seq); int64(v.seq) != seq {
		r.Fail()
	}
	for _, t := range [...]struct {
		k   string
		v   *string
		has uint8
	}{{`,"raised_at":`, &v.raisedAt, hasRaised}, {`,"resolved_at":`, &v.resolvedAt, hasResolved},
		{`,"deadline":`, &v.deadline, hasDeadline}, {`,"evidence_as_of":`, &v.evidenceAsOf, hasEvidence}} {
		if r.Opt(t.k) {
			*t.v = r.Str()
			v.has |= t.has
		}
	}
	r.Lit(`,"lateness_ms":`)
	v.lateness = r.Int()
	if r.Opt(`,"reporting_delay_ms":`) {
		v.delay = r.Int()
	}
	for _, f := range [...]struct {
		k string
		v *string
	}{{`,"resolution":`, &v.resolution}, {`,"superseded_by":`, &v.supersededBy}, {`,"root":`, &v.root}, {`,"root_batch":`, &v.rootBatch}} {
		if r.Opt(f.k) {
			*f.v = r.Str()
		}
	}
	r.Lit(`,"severity":`)
	v.severity = r.Str()
	r.Lit(`,"owner":`)
	v.owner = r.Str()
	if r.Opt(`,"for_ms":`) {
		v.forMs = r.Int()
		v.has |= hasFor
	}
	r.Lit(`,"labels":{`)
	if !r.Opt("}") {
		v.labels = map[string]string{}
		for !r.Failed() {
			k := r.Str()
			r.Lit(":")
			v.labels[k] = r.Str()
			if !r.Next('}') {
				break
			}
		}
	}
	r.Lit(`,"diagnosis":`)
	start := r.I
	r.Diagnosis(d)
	end := r.I
	r.Lit("}")
	if !r.End() {
		return "", false
	}
	return s[start:end], true
}

// point sets w as encoding/json would have from the same record.
func (v *wireValues) point(w *wireFinding) {
	w.Fingerprint, w.State, w.Kind, w.Name, w.Batch = &v.fingerprint, &v.state, &v.kind, &v.name, &v.batch
	w.Pipeline, w.BusinessDate, w.BatchID, w.Status, w.Verdict = &v.pipeline, &v.businessDate, &v.batchID, v.status, v.verdict
	w.Seq, w.LatenessMs, w.DelayMs = &v.seq, &v.lateness, v.delay
	for _, t := range [...]struct {
		has uint8
		v   *string
		w   **string
	}{{hasRaised, &v.raisedAt, &w.RaisedAt}, {hasResolved, &v.resolvedAt, &w.ResolvedAt}, {hasDeadline, &v.deadline, &w.Deadline}, {hasEvidence, &v.evidenceAsOf, &w.EvidenceAsOf}} {
		if v.has&t.has != 0 {
			*t.w = t.v
		}
	}
	if v.has&hasFor != 0 {
		w.ForMs = &v.forMs
	}
	w.Resolution, w.SupersededBy, w.Root, w.RootBatch = v.resolution, v.supersededBy, v.root, v.rootBatch
	w.Severity, w.Owner, w.Labels = v.severity, v.owner, v.labels
}

// FindingError says which field of a finding record is wrong and why.
// Kind classifies it as the events' dead letters are (bad_json,
// missing_field, bad_value), so a consumer that stores findings files a
// bad record under the same reasons.
type FindingError struct {
	Field  string
	Reason string
	Kind   model.RejectKind
}

func (e *FindingError) Error() string {
	if e.Field == "" {
		return "finding: " + e.Reason
	}
	return "finding: " + e.Field + ": " + e.Reason
}

func bad(field, format string, args ...any) error {
	return &FindingError{Field: field, Reason: fmt.Sprintf(format, args...), Kind: model.RejectBadValue}
}

func missing(field string) error {
	return &FindingError{Field: field, Reason: "required field is missing", Kind: model.RejectMissingField}
}

// decodeError classifies a json.Unmarshal error of the record (prefix "")
// or of its diagnosis (prefix "diagnosis."): a value of the wrong type
// names its field; anything else is not JSON of the finding format.
func decodeError(prefix string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &FindingError{Field: prefix + te.Field, Reason: "want a JSON " + jsonKind(te.Type.Kind()) + ", got " + te.Value, Kind: model.RejectBadValue}
	}
	if prefix != "" {
		return &FindingError{Field: strings.TrimSuffix(prefix, "."), Reason: err.Error(), Kind: model.RejectBadValue}
	}
	return &FindingError{Reason: "not a JSON object of the finding format: " + err.Error(), Kind: model.RejectBadJSON}
}

func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	}
	return "number"
}

// ParseFinding decodes one finding record written by AppendJSON. It is the
// one decoder of the format: the detector's restore, notify and the
// results consumer that stores findings all read records through it.
// Unknown fields are ignored (a newer writer may add some). It checks what
// a consumer relies on: every required field present, state open or
// resolved, resolved_at present exactly when resolved, the batch key well
// formed (its business date in the storable range) and equal to
// pipeline/business_date/batch_id, the fingerprint equal to Fingerprint of
// the batch, kind and name, status and verdict known names when given,
// and the diagnosis a JSON object of the same batch with a known status
// and a boundary (or "") as first_missing. Errors are *FindingError.
func ParseFinding(data []byte) (Finding, error) {
	f, _, err := ParseFindingCanonical(data)
	return f, err
}

// ParseFindingCanonical is ParseFinding (the same decoder: it accepts and
// rejects the same records, with the same errors, and gives the same
// Finding), and also returns the record's diagnosis JSON when it is byte
// for byte what f.Diagnosis.AppendJSON writes, "" otherwise: a consumer
// that stores the diagnosis's encoding (ingest/results) keeps those bytes
// instead of encoding it again.
//
// A record in the layout AppendJSON writes, which is every record the
// detector publishes, is read by replay.WireReader; any other goes
// through encoding/json, whose reading is the definition of the format
// (a test holds the two to the same results).
func ParseFindingCanonical(data []byte) (Finding, string, error) {
	return parseFinding(data, true)
}

// parseFinding is ParseFindingCanonical; with fast false it reads every
// record with encoding/json (the reference the tests hold the fast path
// to).
func parseFinding(data []byte, fast bool) (Finding, string, error) {
	var w wireFinding
	var f Finding
	var v wireValues
	var d replay.Diagnosis
	pre := &d
	var diag string
	canonical := false
	if fast {
		diag, canonical = v.read(string(data), &d)
	}
	if canonical {
		v.point(&w)
		w.Diagnosis = data[len(data)-1-len(diag) : len(data)-1]
	} else {
		diag, pre = "", nil
		if err := json.Unmarshal(data, &w); err != nil {
			return f, "", decodeError("", err)
		}
	}
	if err := checkWire(&w, &f, pre); err != nil {
		return f, "", err
	}
	return f, diag, nil
}

// checkWire fills f from w and checks it (ParseFinding); the diagnosis
// is decoded from w.Diagnosis, or is *pre when decoded already.
func checkWire(w *wireFinding, f *Finding, pre *replay.Diagnosis) error {
	for _, req := range [...]struct {
		name string
		v    any
	}{{"fingerprint", w.Fingerprint}, {"state", w.State}, {"kind", w.Kind}, {"name", w.Name}, {"batch", w.Batch},
		{"seq", w.Seq}, {"raised_at", w.RaisedAt}, {"evidence_as_of", w.EvidenceAsOf}, {"lateness_ms", w.LatenessMs}} {
		if isNil(req.v) {
			return missing(req.name)
		}
	}
	if len(w.Diagnosis) == 0 || string(w.Diagnosis) == "null" {
		return &FindingError{Field: "diagnosis", Reason: "required: want the batch's diagnosis as a JSON object", Kind: model.RejectMissingField}
	}
	if w.Diagnosis[0] != '{' {
		return bad("diagnosis", "required: want the batch's diagnosis as a JSON object")
	}
	f.State = State(*w.State)
	if f.State != Open && f.State != Resolved {
		return bad("state", "%q: want open or resolved", *w.State)
	}
	f.Kind, f.Name = Kind(*w.Kind), *w.Name
	if f.Kind == "" {
		return bad("kind", "must not be empty")
	}
	k, err := model.ParseBatchKey(*w.Batch)
	if err != nil {
		return bad("batch", "%q: %v", *w.Batch, err)
	}
	f.Batch = k
	for _, c := range [...]struct {
		name string
		got  *string
		want string
	}{{"pipeline", w.Pipeline, k.Pipeline}, {"business_date", w.BusinessDate, k.BusinessDate.String()}, {"batch_id", w.BatchID, k.BatchID}} {
		if c.got != nil && *c.got != c.want {
			return bad(c.name, "%q disagrees with batch %q", *c.got, *w.Batch)
		}
	}
	f.Fingerprint = *w.Fingerprint
	if want := Fingerprint(k, f.Kind, f.Name); f.Fingerprint != want {
		return bad("fingerprint", "%q is not the fingerprint of %s|%s|%s (want %s)", f.Fingerprint, *w.Batch, f.Kind, f.Name, want)
	}
	if f.Seq = *w.Seq; f.Seq < 1 {
		return bad("seq", "%d: must be 1 or more", f.Seq)
	}
	times := [...]struct {
		name string
		s    *string
		t    *time.Time
	}{{"raised_at", w.RaisedAt, &f.RaisedAt}, {"resolved_at", w.ResolvedAt, &f.ResolvedAt}, {"deadline", w.Deadline, &f.Deadline}, {"evidence_as_of", w.EvidenceAsOf, &f.EvidenceAsOf}}
	for _, t := range times {
		if t.s == nil {
			continue
		}
		v, err := model.ParseTime(*t.s)
		if err != nil {
			return bad(t.name, "%q: %v", *t.s, err)
		}
		*t.t = v.UTC()
	}
	if (f.State == Resolved) != (w.ResolvedAt != nil) {
		if f.State == Resolved {
			return &FindingError{Field: "resolved_at", Reason: "must be present exactly when state is resolved (state resolved)", Kind: model.RejectMissingField}
		}
		return bad("resolved_at", "must be present exactly when state is resolved (state %s)", f.State)
	}
	f.Lateness = time.Duration(*w.LatenessMs) * time.Millisecond
	if f.Lateness.Milliseconds() != *w.LatenessMs {
		return bad("lateness_ms", "%d is out of range", *w.LatenessMs)
	}
	if w.DelayMs < 0 {
		return bad("reporting_delay_ms", "%d: must not be negative", w.DelayMs)
	}
	f.ReportingDelay = time.Duration(w.DelayMs) * time.Millisecond
	f.Resolution = w.Resolution
	if w.SupersededBy != "" {
		sk, err := model.ParseBatchKey(w.SupersededBy)
		if err != nil {
			return bad("superseded_by", "%q: %v", w.SupersededBy, err)
		}
		if sk.Pipeline != k.Pipeline || sk.BusinessDate != k.BusinessDate {
			return bad("superseded_by", "%q is not an attempt of %s's date", w.SupersededBy, *w.Batch)
		}
		f.SupersededBy = w.SupersededBy
	}
	f.Status, f.Verdict = replay.Status(w.Status), w.Verdict
	if err := checkStatus("status", f.Status, true); err != nil {
		return err
	}
	if f.Verdict != "" {
		if _, err := model.ParseHypothesis(f.Verdict); err != nil {
			return bad("verdict", "%q: want delivered or a hypothesis (not_produced ... not_consumed)", f.Verdict)
		}
	}
	if (w.Root == "") != (w.RootBatch == "") {
		return bad("root", "root %q and root_batch %q come together or not at all", w.Root, w.RootBatch)
	}
	if w.RootBatch != "" {
		rk, err := model.ParseBatchKey(w.RootBatch)
		if err != nil {
			return bad("root_batch", "%q: %v", w.RootBatch, err)
		}
		if want := RootFingerprint(rk); w.Root != want {
			return bad("root", "%q is not the incident fingerprint of %s (want %s)", w.Root, w.RootBatch, want)
		}
		f.Root, f.RootBatch = w.Root, w.RootBatch
	} else {
		f.Root, f.RootBatch = RootFingerprint(k), k.String()
	}
	f.Severity, f.Owner = w.Severity, w.Owner
	if len(w.Labels) > 0 {
		f.Labels = w.Labels
	}
	if w.ForMs != nil {
		if *w.ForMs < 0 || *w.ForMs > (24*time.Hour).Milliseconds() {
			return bad("for_ms", "%d: want 0 to 86400000 (a day)", *w.ForMs)
		}
		f.For, f.HasFor = time.Duration(*w.ForMs)*time.Millisecond, true
	}
	if pre != nil {
		f.Diagnosis = *pre
	} else if err := json.Unmarshal(w.Diagnosis, &f.Diagnosis); err != nil {
		return decodeError("diagnosis.", err)
	}
	if f.Diagnosis.Batch != *w.Batch {
		return bad("diagnosis.batch", "%q differs from the finding's batch %q", f.Diagnosis.Batch, *w.Batch)
	}
	if err := checkStatus("diagnosis.status", f.Diagnosis.Status, false); err != nil {
		return err
	}
	if fm := f.Diagnosis.FirstMissing; fm != "" {
		if _, err := model.ParseBoundary(fm); err != nil {
			return bad("diagnosis.first_missing", "%q: want a boundary name (produced ... consumed) or \"\"", fm)
		}
	}
	return nil
}

// checkStatus checks that s is one of replay.Statuses ("" only when
// optional): a status no dashboard or route knows would silently fall out
// of all of them.
func checkStatus(field string, s replay.Status, optional bool) error {
	if s == "" {
		if optional {
			return nil
		}
		return missing(field)
	}
	if slices.Contains(replay.Statuses[:], s) {
		return nil
	}
	return bad(field, "%q: want broken, delivered, failed, late or in_progress", s)
}

func isNil(v any) bool {
	switch p := v.(type) {
	case *string:
		return p == nil
	case *int:
		return p == nil
	case *int64:
		return p == nil
	}
	return v == nil
}

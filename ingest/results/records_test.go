package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/schema"
)

// asOf is the as-of time of the test diagnoses.
var asOf = time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)

// diagnosisRecords returns the analyzer's diagnoses (replay's AppendJSON,
// what backfill publishes) of the batches of n generated events: real
// records, every status the generator reaches.
func diagnosisRecords(t testing.TB, n int, pipeline string) [][]byte {
	t.Helper()
	set := batches.New((*contract.Set)(nil), asOf)
	for _, e := range testenv.Events(n, pipeline, 7) {
		set.Add(&e)
	}
	var out [][]byte
	for _, d := range set.Diagnose(nil) {
		out = append(out, d.AppendJSON(nil))
	}
	if len(out) == 0 {
		t.Fatal("no diagnoses generated")
	}
	return out
}

// findingRecord builds a finding record in the wire format of
// analyzer/detect (docs/ingest.md), embedding diagnosis.
func findingRecord(t testing.TB, diagnosis []byte, kind, name, state string, seq int, raised time.Time, lateness time.Duration) []byte {
	t.Helper()
	var d struct {
		Batch, Pipeline, BusinessDate, BatchID string
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(diagnosis, &raw); err != nil {
		t.Fatal(err)
	}
	for k, p := range map[string]*string{"batch": &d.Batch, "pipeline": &d.Pipeline, "business_date": &d.BusinessDate, "batch_id": &d.BatchID} {
		if err := json.Unmarshal(raw[k], p); err != nil {
			t.Fatal(err)
		}
	}
	rec := map[string]any{
		"fingerprint": fmt.Sprintf("%016x", fnv(d.Batch+"|"+kind+"|"+name)),
		"state":       state, "kind": kind, "name": name, "seq": seq,
		"batch": d.Batch, "pipeline": d.Pipeline, "business_date": d.BusinessDate, "batch_id": d.BatchID,
		"raised_at":      raised.Format(time.RFC3339Nano),
		"deadline":       raised.Format(time.RFC3339Nano),
		"lateness_ms":    lateness.Milliseconds(),
		"severity":       "critical",
		"owner":          "team-ledger",
		"labels":         map[string]string{"team": "ledger", "tier": "1"},
		"evidence_as_of": raised.Add(lateness + time.Second).Format(time.RFC3339Nano),
		"diagnosis":      json.RawMessage(diagnosis),
		"some_new_field": []int{1, 2},
	}
	if state == stateResolved {
		rec["resolved_at"] = raised.Add(lateness).Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// withField returns the JSON object rec with field set to the raw JSON
// value v, or removed when v is "".
func withField(t testing.TB, rec []byte, field, v string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rec, &m); err != nil {
		t.Fatal(err)
	}
	if v == "" {
		delete(m, field)
	} else {
		m[field] = json.RawMessage(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseDiagnosis(t *testing.T) {
	recs := diagnosisRecords(t, 300, "pipe.parse")
	statuses := map[string]bool{}
	for _, r := range recs {
		d, err := ParseDiagnosis(r)
		if err != nil {
			t.Fatalf("analyzer diagnosis rejected: %v\n%s", err, r)
		}
		var want struct {
			Batch, Status, Verdict string
			FirstMissing           string    `json:"first_missing"`
			AsOf                   time.Time `json:"as_of"`
		}
		if err := json.Unmarshal(r, &want); err != nil {
			t.Fatal(err)
		}
		if d.Key.String() != want.Batch || d.Status != want.Status || d.Verdict != want.Verdict ||
			d.FirstMissing != want.FirstMissing || d.AsOfMS != want.AsOf.UnixMilli() || d.JSON != string(r) {
			t.Fatalf("parsed %+v from %s", d, r)
		}
		statuses[d.Status] = true
	}
	if len(statuses) < 2 {
		t.Fatalf("generated diagnoses cover only statuses %v", statuses)
	}
}

func TestParseRejects(t *testing.T) {
	diag := diagnosisRecords(t, 40, "pipe.reject")[0]
	find := findingRecord(t, diag, "overdue", "signal_delivered", stateOpen, 1, asOf.Add(-time.Hour), 0)
	resolved := findingRecord(t, diag, "overdue", "signal_delivered", stateResolved, 2, asOf.Add(-time.Hour), time.Minute)
	tests := []struct {
		name     string
		finding  bool
		rec      []byte
		kind     model.RejectKind
		field    string // the field the error must name
		contains string
	}{
		{"empty", false, []byte{}, model.RejectBadJSON, "", "not a JSON object"},
		{"array", false, []byte(`[1]`), model.RejectBadJSON, "", "not a JSON object"},
		{"truncated", false, diag[:len(diag)/2], model.RejectBadJSON, "", "invalid JSON"},
		{"too large", false, append([]byte(`{"pad":"`), make([]byte, MaxRecordBytes)...), model.RejectTooLarge, "", "limit"},
		{"no batch", false, withField(t, diag, "batch", ""), model.RejectMissingField, "batch", "required"},
		{"batch differs", false, withField(t, diag, "batch", `"p/2026-01-01/x"`), model.RejectBadValue, "batch", "differs"},
		{"bad date", false, withField(t, diag, "business_date", `"2026-13-01"`), model.RejectBadValue, "business_date", "month"},
		{"pipeline with slash", false, withField(t, diag, "pipeline", `"a/b"`), model.RejectBadValue, "pipeline", "'/'"},
		{"status unknown", false, withField(t, diag, "status", `"fine"`), model.RejectBadValue, "status", "want broken"},
		{"status number", false, withField(t, diag, "status", `3`), model.RejectBadValue, "status", "want a JSON string"},
		{"verdict unknown", false, withField(t, diag, "verdict", `"maybe"`), model.RejectBadValue, "verdict", "hypothesis"},
		{"first_missing unknown", false, withField(t, diag, "first_missing", `"lunch"`), model.RejectBadValue, "first_missing", "boundary"},
		{"no as_of", false, withField(t, diag, "as_of", ""), model.RejectMissingField, "as_of", "required"},
		{"bad as_of", false, withField(t, diag, "as_of", `"yesterday"`), model.RejectBadValue, "as_of", "RFC 3339"},

		{"finding no fingerprint", true, withField(t, find, "fingerprint", ""), model.RejectMissingField, "fingerprint", "required"},
		{"finding bad state", true, withField(t, find, "state", `"firing"`), model.RejectBadValue, "state", "open or resolved"},
		{"finding no state", true, withField(t, find, "state", ""), model.RejectMissingField, "state", "required"},
		{"finding no kind", true, withField(t, find, "kind", ""), model.RejectMissingField, "kind", "required"},
		{"finding no raised_at", true, withField(t, find, "raised_at", ""), model.RejectMissingField, "raised_at", "required"},
		{"finding no evidence_as_of", true, withField(t, find, "evidence_as_of", ""), model.RejectMissingField, "evidence_as_of", "required"},
		{"resolved without resolved_at", true, withField(t, resolved, "resolved_at", ""), model.RejectMissingField, "resolved_at", "state is resolved"},
		{"open with resolved_at", true, withField(t, find, "resolved_at", `"2026-10-04T00:00:00Z"`), model.RejectBadValue, "resolved_at", "exactly when state is resolved"},
		{"finding no seq", true, withField(t, find, "seq", ""), model.RejectMissingField, "seq", "required"},
		{"finding seq 0", true, withField(t, find, "seq", "0"), model.RejectBadValue, "seq", "1 or more"},
		{"finding seq too large", true, withField(t, find, "seq", "4294967296"), model.RejectBadValue, "seq", "largest seq findings_v2 stores"},
		{"finding seq string", true, withField(t, find, "seq", `"1"`), model.RejectBadValue, "seq", "want a JSON number"},
		{"finding status unknown", true, withField(t, find, "status", `"fine"`), model.RejectBadValue, "status", "want broken"},
		{"finding verdict unknown", true, withField(t, find, "verdict", `"maybe"`), model.RejectBadValue, "verdict", "hypothesis"},
		{"lateness string", true, withField(t, find, "lateness_ms", `"5m"`), model.RejectBadValue, "lateness_ms", "want a JSON number"},
		{"label not a string", true, withField(t, find, "labels", `{"a":1}`), model.RejectBadValue, "labels", "want a JSON string"},
		{"diagnosis not an object", true, withField(t, find, "diagnosis", `"late"`), model.RejectBadValue, "diagnosis", "object"},
		{"diagnosis of another batch", true, withField(t, find, "diagnosis", string(withField(t, diag, "batch", `"p/2026-01-01/x"`))), model.RejectBadValue, "diagnosis.batch", "differs"},
		{"diagnosis bad status", true, withField(t, find, "diagnosis", string(withField(t, diag, "status", `"fine"`))), model.RejectBadValue, "diagnosis.status", "want broken"},
		{"finding foreign fingerprint", true, withField(t, find, "fingerprint", `"ab12"`), model.RejectBadValue, "fingerprint", "not the fingerprint"},
		{"finding no lateness_ms", true, withField(t, find, "lateness_ms", ""), model.RejectMissingField, "lateness_ms", "required"},
		{"finding no diagnosis", true, withField(t, find, "diagnosis", ""), model.RejectMissingField, "diagnosis", "required"},
		{"finding null diagnosis", true, withField(t, find, "diagnosis", "null"), model.RejectMissingField, "diagnosis", "required"},
		{"diagnosis bad first_missing", true, withField(t, find, "diagnosis", string(withField(t, diag, "first_missing", `"lunch"`))), model.RejectBadValue, "diagnosis.first_missing", "boundary"},
		{"diagnosis hypotheses not a list", true, withField(t, find, "diagnosis", string(withField(t, diag, "hypotheses", `{}`))), model.RejectBadValue, "diagnosis.hypotheses", "want a JSON array"},
		{"finding raised_at after 2105", true, withField(t, find, "raised_at", `"2106-03-01T00:00:00Z"`), model.RejectBadValue, "raised_at", "the times ClickHouse stores"},
		{"finding date out of range", true, withField(t, withField(t, withField(t, withField(t, find, "business_date", ""), "pipeline", ""), "batch_id", ""), "batch", `"p/2106-01-01/x"`), model.RejectBadValue, "batch", "business_date"},
		{"finding bad deadline", true, withField(t, find, "deadline", `"soon"`), model.RejectBadValue, "deadline", "RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.finding {
				_, err = ParseFinding(tt.rec)
			} else {
				_, err = ParseDiagnosis(tt.rec)
			}
			ve, ok := err.(*model.ValidationError)
			if !ok {
				t.Fatalf("error %v (%T), want a *model.ValidationError", err, err)
			}
			if ve.Kind != tt.kind || ve.Field != tt.field || !strings.Contains(ve.Error(), tt.contains) {
				t.Fatalf("error %q (kind %s, field %q), want kind %s, field %q, containing %q", ve, ve.Kind, ve.Field, tt.kind, tt.field, tt.contains)
			}
		})
	}
}

// The finding states as records carry them.
const (
	stateOpen     = string(detect.Open)
	stateResolved = string(detect.Resolved)
)

func TestParseFinding(t *testing.T) {
	diag := diagnosisRecords(t, 40, "pipe.finding")[0]
	raised := time.Date(2026, 9, 30, 22, 0, 0, 0, time.UTC)
	rec := findingRecord(t, diag, "overdue", "signal_delivered", stateResolved, 3, raised, 90*time.Minute)
	f, err := ParseFinding(rec)
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Batch, Status string }
	json.Unmarshal(diag, &d)
	want := schema.FindingRow{
		Fingerprint: fmt.Sprintf("%016x", fnv(d.Batch+"|overdue|signal_delivered")), State: stateResolved,
		Kind: "overdue", Name: "signal_delivered", Seq: 3,
		RaisedMS: raised.UnixMilli(), ResolvedMS: raised.Add(90 * time.Minute).UnixMilli(), DeadlineMS: raised.UnixMilli(),
		LatenessMS: (90 * time.Minute).Milliseconds(), Severity: "critical", Owner: "team-ledger",
		LabelKeys: []string{"team", "tier"}, LabelValues: []string{"ledger", "1"},
		EvidenceAsOfMS: raised.Add(90*time.Minute + time.Second).UnixMilli(),
	}
	if k, err := model.ParseBatchKey(d.Batch); err == nil {
		want.Root = detect.RootFingerprint(k) // not blocked: its own incident
	}
	if f.Key.String() != d.Batch || f.Status != d.Status || f.Diagnosis != string(diag) {
		t.Fatalf("identity/diagnosis: got %s %s, want %s %s; diagnosis kept: %v", f.Key, f.Status, d.Batch, d.Status, f.Diagnosis == string(diag))
	}
	f.Key, f.Status, f.Verdict, f.FirstMissing, f.Diagnosis = model.BatchKey{}, "", "", "", ""
	if fmt.Sprint(f) != fmt.Sprint(want) {
		t.Fatalf("got  %+v\nwant %+v", f, want)
	}

	// How it ended, when not the plain way: stored as the record says.
	k0, _ := model.ParseBatchKey(d.Batch)
	rerun := k0.String() + "-r2"
	ended := withField(t, withField(t, withField(t, rec, "reporting_delay_ms", "180000"), "resolution", `"superseded by `+rerun+`"`),
		"superseded_by", `"`+rerun+`"`)
	if f, err := ParseFinding(ended); err != nil || f.ReportingDelayMS != 180_000 || f.Resolution != "superseded by "+rerun || f.SupersededBy != rerun {
		t.Errorf("resolution fields stored as %d %q %q (%v), want 180000, superseded by %s, %s", f.ReportingDelayMS, f.Resolution, f.SupersededBy, err, rerun, rerun)
	}

	// Optional fields absent or null: still valid, zero values; status
	// and verdict then come from the diagnosis.
	k, err := model.ParseBatchKey(d.Batch)
	if err != nil {
		t.Fatal(err)
	}
	min := []byte(`{"fingerprint":"` + detect.Fingerprint(k, "missing", "") + `","state":"open","kind":"missing","name":"","seq":1,` +
		`"batch":"` + d.Batch + `","raised_at":"2026-09-30T22:00:00+08:00","evidence_as_of":"2026-09-30T14:00:01Z",` +
		`"lateness_ms":0,"resolved_at":null,"labels":null,"diagnosis":` + string(diag) + `}`)
	f, err = ParseFinding(min)
	if err != nil {
		t.Fatal(err)
	}
	if f.RaisedMS != time.Date(2026, 9, 30, 14, 0, 0, 0, time.UTC).UnixMilli() || f.ResolvedMS != 0 || f.DeadlineMS != 0 ||
		f.LabelKeys != nil || f.Status != d.Status || f.Diagnosis != string(diag) {
		t.Fatalf("minimal finding parsed as %+v", f)
	}
}

// TestParseFindingOneDecoder: the findings consumer stores a record
// exactly when the detector's decoder reads it, and stores what that
// decoder read. Records within the storable ranges: the detector's golden
// records, generated ones, and each broken in ways a second decoder could
// judge differently.
func TestParseFindingOneDecoder(t *testing.T) {
	diag := diagnosisRecords(t, 40, "pipe.one")[0]
	good := append(detectRecords(t),
		findingRecord(t, diag, "overdue", "signal_delivered", stateOpen, 1, asOf.Add(-time.Hour), 0),
		findingRecord(t, diag, "row_mismatch", "", stateResolved, 4, asOf.Add(-time.Hour), time.Minute))
	recs := append([][]byte{}, good...)
	for _, g := range good[len(good)-2:] {
		for _, m := range []struct{ field, v string }{
			{"fingerprint", `"ab12"`}, {"name", ""}, {"lateness_ms", ""}, {"lateness_ms", "1e30"}, {"diagnosis", ""}, {"diagnosis", "null"},
			{"pipeline", `"other"`}, {"pipeline", ""}, {"business_date", ""}, {"batch_id", ""},
			{"status", `""`}, {"status", ""}, {"status", `"fine"`}, {"verdict", `"maybe"`}, {"verdict", ""},
			{"deadline", `"soon"`}, {"resolved_at", `"2026-10-04T00:00:00Z"`}, {"resolved_at", ""}, {"severity", "1"}, {"labels", `{"a":1}`},
			{"diagnosis", string(withField(t, diag, "status", `"fine"`))},
			{"diagnosis", string(withField(t, diag, "status", ""))},
			{"diagnosis", string(withField(t, diag, "verdict", `"maybe"`))},
			{"diagnosis", string(withField(t, diag, "first_missing", `"lunch"`))},
			{"diagnosis", string(withField(t, diag, "batch", ""))},
			{"diagnosis", string(withField(t, diag, "as_of", `"yesterday"`))},
		} {
			recs = append(recs, withField(t, g, m.field, m.v))
		}
	}
	accepted := 0
	for _, r := range recs {
		want, derr := detect.ParseFinding(r)
		got, err := ParseFinding(r)
		if (err == nil) != (derr == nil) {
			t.Errorf("stored error %v, the detector's decoder %v:\n%.300s", err, derr, r)
			continue
		}
		if err != nil {
			var fe *detect.FindingError
			ve, ok := err.(*model.ValidationError)
			if !ok || !errors.As(derr, &fe) || ve.Field != fe.Field || ve.Kind == "" {
				t.Errorf("error %v (%T), want a *model.ValidationError naming the decoder's field (%v)", err, err, derr)
			}
			continue
		}
		accepted++
		status, verdict := string(want.Status), want.Verdict
		if status == "" {
			status = string(want.Diagnosis.Status)
		}
		if verdict == "" {
			verdict = want.Diagnosis.Verdict.String()
		}
		if got.Key != want.Batch || got.Fingerprint != want.Fingerprint || got.State != string(want.State) || got.Kind != string(want.Kind) ||
			got.Name != want.Name || int(got.Seq) != want.Seq || got.LatenessMS != want.Lateness.Milliseconds() ||
			got.RaisedMS != want.RaisedAt.UnixMilli() || got.EvidenceAsOfMS != want.EvidenceAsOf.UnixMilli() ||
			got.Status != status || got.Verdict != verdict || got.FirstMissing != want.Diagnosis.FirstMissing ||
			got.Severity != want.Severity || got.Owner != want.Owner || len(got.LabelKeys) != len(want.Labels) ||
			got.Diagnosis != string(want.Diagnosis.AppendJSON(nil)) {
			t.Errorf("stored %+v\nthe decoder read %+v", got, want)
		}
	}
	if accepted < len(good) || accepted == len(recs) {
		t.Fatalf("%d of %d records accepted: the table no longer tells the decoders apart", accepted, len(recs))
	}
}

// FuzzParseDiagnosis: any input is either a *model.ValidationError or a
// diagnosis whose stored fields are consistent.
func FuzzParseDiagnosis(f *testing.F) {
	for _, r := range diagnosisRecords(f, 60, "pipe.fuzz")[:5] {
		f.Add(r)
	}
	f.Add([]byte(`{"batch":"p/2026-09-30/x","pipeline":"p","business_date":"2026-09-30","batch_id":"x","status":"late","verdict":"not_identified","as_of":"2026-10-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDiagnosis(b)
		if err != nil {
			if _, ok := err.(*model.ValidationError); !ok {
				t.Fatalf("error %v is %T, want *model.ValidationError", err, err)
			}
			return
		}
		if d.JSON != string(b) || d.Key.Pipeline == "" || d.Key.BatchID == "" || d.Status == "" || d.Verdict == "" || d.AsOfMS < 0 {
			t.Fatalf("accepted %q as %+v", b, d)
		}
	})
}

// FuzzParseFinding: any input is either a *model.ValidationError or a
// finding that satisfies the lifecycle's rules and that the detector's
// decoder accepts too.
func FuzzParseFinding(f *testing.F) {
	diag := diagnosisRecords(f, 60, "pipe.fuzz")[0]
	f.Add(findingRecord(f, diag, "overdue", "signal_delivered", stateOpen, 1, asOf, 0))
	f.Add(findingRecord(f, diag, "late", "", stateResolved, 2, asOf, time.Hour))
	for _, r := range detectRecords(f) {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ParseFinding(b)
		if _, derr := detect.ParseFinding(b); err == nil && derr != nil {
			t.Fatalf("stored a record the detector's decoder rejects (%v): %q", derr, b)
		}
		if err != nil {
			if _, ok := err.(*model.ValidationError); !ok {
				t.Fatalf("error %v is %T, want *model.ValidationError", err, err)
			}
			return
		}
		if x.Fingerprint == "" || x.Kind == "" || x.RaisedMS < 0 ||
			(x.State == stateResolved) != (x.ResolvedMS != 0) || x.Seq < 1 || len(x.LabelKeys) != len(x.LabelValues) {
			t.Fatalf("accepted %q as %+v", b, x)
		}
	})
}

// detectRecords returns the records of analyzer/detect's golden file: the
// seed case's findings exactly as the detector writes them (read from
// there, so that the two packages cannot drift apart).
func detectRecords(t testing.TB) [][]byte {
	t.Helper()
	b, err := os.ReadFile("../../analyzer/detect/testdata/seed-findings.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		out = append(out, l)
	}
	return out
}

// TestParseDetectRecords: what the detector writes is stored, field by
// field, as docs/detect.md describes it.
func TestParseDetectRecords(t *testing.T) {
	recs := detectRecords(t)
	if len(recs) == 0 {
		t.Fatal("no detector records")
	}
	for _, r := range recs {
		f, err := ParseFinding(r)
		if err != nil {
			t.Fatalf("detector record rejected: %v\n%s", err, r)
		}
		var w struct {
			Fingerprint, State, Kind, Name, Batch, Status, Verdict, Severity, Owner string
			Seq                                                                     uint32
			RaisedAt                                                                time.Time       `json:"raised_at"`
			Deadline                                                                time.Time       `json:"deadline"`
			EvidenceAsOf                                                            time.Time       `json:"evidence_as_of"`
			LatenessMS                                                              int64           `json:"lateness_ms"`
			Diagnosis                                                               json.RawMessage `json:"diagnosis"`
		}
		if err := json.Unmarshal(r, &w); err != nil {
			t.Fatal(err)
		}
		got := []any{f.Fingerprint, f.State, f.Kind, f.Name, f.Key.String(), f.Status, f.Verdict, f.Severity, f.Owner, f.Seq,
			f.RaisedMS, f.DeadlineMS, f.EvidenceAsOfMS, f.LatenessMS, f.Diagnosis}
		want := []any{w.Fingerprint, w.State, w.Kind, w.Name, w.Batch, w.Status, w.Verdict, w.Severity, w.Owner, w.Seq,
			w.RaisedAt.UnixMilli(), w.Deadline.UnixMilli(), w.EvidenceAsOf.UnixMilli(), w.LatenessMS, string(w.Diagnosis)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("parsed\n%v\nwant\n%v", got, want)
		}
		if f.FirstMissing == "" && f.Status != "delivered" {
			t.Errorf("first_missing not taken from the diagnosis of a %s batch", f.Status)
		}
	}
}

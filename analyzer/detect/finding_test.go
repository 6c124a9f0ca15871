package detect_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

// sampleFindings returns findings of every kind and state the generator
// makes, plus one with routing fields.
func sampleFindings(t *testing.T) []detect.Finding {
	p := newPlayer(mustNew(t, detect.Config{Contracts: seedContracts(t)}), genHistory(rand.New(rand.NewPCG(3, 3)), 6), nil)
	for _, s := range steps(6) {
		p.step(s)
	}
	fs := p.findings
	if len(fs) < 5 {
		t.Fatalf("only %d sample findings", len(fs))
	}
	f := fs[0]
	f.Severity, f.Owner, f.Labels = "critical", "team-finance <fin@example.com>", map[string]string{"team": "finance", "tier": "1\n\"quoted\""}
	held := fs[0]
	held.For, held.HasFor = 10*time.Minute, true
	zero := fs[0]
	zero.HasFor = true // for: 0s, page at once: present as 0, not absent
	return append(fs, f, held, zero)
}

var timeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// TestFindingJSON checks the wire format with encoding/json as an
// independent reader: snake_case names, RFC 3339 UTC millisecond times,
// resolved_at only when resolved, lateness in milliseconds, the diagnosis
// of the same batch; and that ParseFinding reads back what AppendJSON
// wrote.
func TestFindingJSON(t *testing.T) {
	kinds := map[string]bool{}
	for _, f := range sampleFindings(t) {
		b := f.AppendJSON(nil)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("invalid JSON %s: %v", b, err)
		}
		kinds[string(f.Kind)+"/"+string(f.State)] = true
		for _, k := range []string{"fingerprint", "state", "kind", "name", "batch", "pipeline", "business_date", "batch_id",
			"status", "verdict", "seq", "raised_at", "evidence_as_of", "lateness_ms", "severity", "owner", "labels", "diagnosis"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("field %s missing in %s", k, b)
			}
		}
		if fp, _ := m["fingerprint"].(string); len(fp) != 16 || strings.Trim(fp, "0123456789abcdef") != "" {
			t.Errorf("fingerprint %q: want 16 lower-case hex digits", fp)
		}
		for _, k := range []string{"raised_at", "resolved_at", "deadline", "evidence_as_of"} {
			if v, ok := m[k]; ok && !timeRE.MatchString(v.(string)) {
				t.Errorf("%s = %v: want RFC 3339 UTC with milliseconds", k, v)
			}
		}
		if _, ok := m["resolved_at"]; ok != (f.State == detect.Resolved) {
			t.Errorf("state %s: resolved_at present = %v", f.State, ok)
		}
		if got := m["lateness_ms"].(float64); got != float64(f.Lateness/time.Millisecond) {
			t.Errorf("lateness_ms %v, want %d", got, f.Lateness.Milliseconds())
		}
		if diag := m["diagnosis"].(map[string]any); diag["batch"] != m["batch"] || diag["verdict"] != m["verdict"] {
			t.Errorf("diagnosis of %v/%v in a finding of %v/%v", diag["batch"], diag["verdict"], m["batch"], m["verdict"])
		}
		back, err := detect.ParseFinding(b)
		if err != nil {
			t.Fatalf("ParseFinding(%s): %v", b, err)
		}
		if back.Fingerprint != f.Fingerprint || back.State != f.State || back.Seq != f.Seq || back.Lateness != f.Lateness ||
			!back.RaisedAt.Equal(f.RaisedAt) || !back.ResolvedAt.Equal(f.ResolvedAt) || !back.Deadline.Equal(f.Deadline) ||
			back.Batch != f.Batch || back.Owner != f.Owner || back.For != f.For || back.HasFor != f.HasFor || len(back.Labels) != len(f.Labels) || back.Diagnosis.Status != f.Diagnosis.Status {
			t.Errorf("round trip changed the finding:\nwant %+v\n got %+v", summarize([]detect.Finding{f}), summarize([]detect.Finding{back}))
		}
		if again := back.AppendJSON(nil); !bytes.Equal(again, b) {
			t.Errorf("re-encoding a parsed finding differs:\n%s", firstDiff(again, b))
		}
	}
	for _, want := range []string{"overdue/open", "overdue/resolved", "failed/open"} {
		if !kinds[want] {
			t.Errorf("no %s finding among the samples (have %v)", want, kinds)
		}
	}
}

// TestParseFindingErrors: each broken record names the field and the reason.
func TestParseFindingErrors(t *testing.T) {
	good, err := os.ReadFile("testdata/seed-findings.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	good = bytes.TrimSpace(good)
	if _, err := detect.ParseFinding(good); err != nil {
		t.Fatalf("the golden record does not parse: %v", err)
	}
	edit := func(old, new string) []byte {
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("the golden record has no %s", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	tests := []struct {
		name, field, reason string
		data                []byte
	}{
		{"not JSON", "", "not a JSON object", []byte("{")},
		{"array", "", "not a JSON object", []byte("[]")},
		{"no fingerprint", "fingerprint", "missing", edit(`"fingerprint":"b2cc3eaca6e2972c",`, ``)},
		{"wrong fingerprint", "fingerprint", "not the fingerprint", edit(`"fingerprint":"b2cc3eaca6e2972c"`, `"fingerprint":"0000000000000000"`)},
		{"bad state", "state", "want open or resolved", edit(`"state":"open"`, `"state":"firing"`)},
		{"resolved without resolved_at", "resolved_at", "exactly when", edit(`"state":"open"`, `"state":"resolved"`)},
		{"bad batch", "batch", "want pipeline/business_date/batch_id", edit(`"batch":"account-balance-snapshot.daily/2026-09-30/20260930"`, `"batch":"x"`)},
		{"pipeline disagrees", "pipeline", "disagrees", edit(`"pipeline":"account-balance-snapshot.daily"`, `"pipeline":"other"`)},
		{"bad time", "raised_at", "2026-09-31", edit(`"raised_at":"2026-09-30T22:15:30.000Z"`, `"raised_at":"2026-09-31T22:15:30.000Z"`)},
		{"seq zero", "seq", "1 or more", edit(`"seq":1`, `"seq":0`)},
		{"negative for", "for_ms", "want 0 to", edit(`"labels":`, `"for_ms":-1,"labels":`)},
		{"for over a day", "for_ms", "want 0 to", edit(`"labels":`, `"for_ms":86400001,"labels":`)},
		{"no diagnosis", "diagnosis", "required", good[:bytes.Index(good, []byte(`,"diagnosis":`))]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.data
			if tt.name == "no diagnosis" {
				data = append(append([]byte{}, data...), '}')
			}
			_, err := detect.ParseFinding(data)
			var fe *detect.FindingError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want a *FindingError", err)
			}
			if fe.Field != tt.field || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q (field %q), want field %q and %q", err, fe.Field, tt.field, tt.reason)
			}
		})
	}
}

// FuzzParseFinding: the decoder never panics, and what it accepts
// re-encodes to a record it reads back the same.
func FuzzParseFinding(f *testing.F) {
	good, err := os.ReadFile("testdata/seed-findings.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.TrimSpace(good))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"fingerprint":1}`))
	f.Add([]byte(`{"state":"resolved","resolved_at":"2026-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fd, err := detect.ParseFinding(data)
		if err != nil {
			return
		}
		b := fd.AppendJSON(nil)
		back, err := detect.ParseFinding(b)
		if err != nil {
			t.Fatalf("re-encoded finding does not parse: %v\n%s", err, b)
		}
		if again := back.AppendJSON(nil); !bytes.Equal(again, b) {
			t.Fatalf("not stable:\n%s\n%s", b, again)
		}
		if fd.Fingerprint != detect.Fingerprint(fd.Batch, fd.Kind, fd.Name) || fd.Batch == (model.BatchKey{}) {
			t.Fatalf("accepted a finding with a foreign fingerprint or no batch: %s", data)
		}
	})
}

// TestFingerprintIsFNV1a: Fingerprint is the 64-bit FNV-1a hash (as
// hash/fnv computes it) of "pipeline/business_date/batch_id|kind|name" in
// 16 zero-padded hex digits, for short keys and for keys longer than its
// buffer on the stack: the fingerprints of the findings already stored
// and published do not change.
func TestFingerprintIsFNV1a(t *testing.T) {
	long := strings.Repeat("p", 200)
	for _, c := range []struct {
		k    model.BatchKey
		kind detect.Kind
		name string
	}{
		{model.BatchKey{Pipeline: "orders", BusinessDate: model.Date{Year: 2026, Month: 12, Day: 2}, BatchID: "b1"}, detect.Overdue, "signal_delivered"},
		{model.BatchKey{Pipeline: long, BusinessDate: model.Date{Year: 2026, Month: 1, Day: 9}, BatchID: long}, detect.Missing, ""},
		{model.BatchKey{}, "", ""},
	} {
		h := fnv.New64a()
		h.Write([]byte(c.k.String() + "|" + string(c.kind) + "|" + c.name))
		want := fmt.Sprintf("%016x", h.Sum64())
		if got := detect.Fingerprint(c.k, c.kind, c.name); got != want {
			t.Errorf("Fingerprint(%v, %s, %s) = %s, want %s", c.k, c.kind, c.name, got, want)
		}
	}
}

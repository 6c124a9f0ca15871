package detect_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/analyzer/detect"
)

// sameAsJSON checks that ParseFindingCanonical reads data as
// encoding/json does (detect.ParseFindingJSON): the same acceptance, the
// same error (field, reason and kind), the same Finding; and that a
// diagnosis it returns is a part of data and what AppendJSON writes of
// the Finding's diagnosis. It reports whether the fast path took data
// (the diagnosis returned).
func sameAsJSON(t *testing.T, data []byte) bool {
	t.Helper()
	got, diag, err := detect.ParseFindingCanonical(data)
	want, werr := detect.ParseFindingJSON(data)
	if (err == nil) != (werr == nil) {
		t.Fatalf("fast path: error %v, encoding/json: error %v\n%.600s", err, werr, data)
	}
	if err != nil {
		var fe, we *detect.FindingError
		if !errors.As(err, &fe) || !errors.As(werr, &we) || *fe != *we {
			t.Fatalf("fast path: error %#v, encoding/json: error %#v\n%.600s", err, werr, data)
		}
		if diag != "" {
			t.Fatalf("a diagnosis returned with the error %v", err)
		}
		return false
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path read\n%+v\nencoding/json read\n%+v\nfrom %.600s", got, want, data)
	}
	if diag == "" {
		return false
	}
	if !bytes.Contains(data, []byte(diag)) {
		t.Fatalf("diagnosis %.200s is not a part of the record", diag)
	}
	if enc := got.Diagnosis.AppendJSON(nil); string(enc) != diag {
		t.Fatalf("diagnosis taken as canonical:\n%s\nAppendJSON writes\n%s", diag, enc)
	}
	return true
}

// wireSeeds returns the records the decoders are compared on: the
// detector's golden records, generated ones of every kind and state
// (generated of them),
// and edits of them in the same layout (so that the fast path reads
// them to the end) or not.
func wireSeeds(t testing.TB, generated int) [][]byte {
	b, err := os.ReadFile("testdata/seed-findings.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if generated > 0 {
		recs := benchRecords(t, 8)
		r := rand.New(rand.NewPCG(9, 9))
		for range generated {
			out = append(out, recs[r.IntN(len(recs))])
		}
	}
	base := string(out[0])
	for _, e := range wireEdits {
		if !strings.Contains(base, e.old) {
			t.Fatalf("edit %q: not in the golden record", e.old)
		}
		out = append(out, []byte(strings.Replace(base, e.old, e.new, 1)))
	}
	return out
}

// wireEdits change one thing of the golden record: values the checks
// reject in the same layout, escapes and numbers AppendJSON writes and
// does not, fields left out or repeated, white space.
var wireEdits = []struct{ old, new string }{
	{`"state":"open"`, `"state":"closed"`},
	{`"kind":"overdue"`, `"kind":""`},
	{`"fingerprint":"b2cc3eaca6e2972c"`, `"fingerprint":"b2cc3eaca6e2972d"`},
	{`"seq":1`, `"seq":0`},
	{`"seq":1`, `"seq":-1`},
	{`"seq":1`, `"seq":01`},
	{`"seq":1`, `"seq":1.0`},
	{`"seq":1`, `"seq":1e0`},
	{`"seq":1`, `"seq":-0`},
	{`"seq":1`, `"seq":123456789012345678`},
	{`"seq":1`, `"seq":1234567890123456789`},
	{`"seq":1`, `"seq":12345678901234567890`},
	{`"lateness_ms":900000`, `"lateness_ms":-900000`},
	{`"lateness_ms":900000`, `"lateness_ms":99999999999999999`},
	{`"lateness_ms":900000`, `"lateness_ms":900000,"reporting_delay_ms":-1`},
	{`"lateness_ms":900000`, `"lateness_ms":900000,"reporting_delay_ms":5000`},
	{`"lateness_ms":900000`, `"lateness_ms":900000,"resolution":"on time, \"reported\" late"`},
	{`"lateness_ms":900000`, `"lateness_ms":900000,"superseded_by":"x/2026-09-30/y"`},
	{`"lateness_ms":900000`, `"lateness_ms":900000,"root":"0000000000000000","root_batch":"x/2026-09-30/y"`},
	{`"lateness_ms":900000`, `"lateness_ms":900000,"root":"0000000000000000"`},
	{`"owner":""`, `"owner":"","for_ms":600000`},
	{`"owner":""`, `"owner":"","for_ms":-1`},
	{`"owner":""`, `"owner":"team \u00e9\u0001\n\t\r\\"`},
	{`"owner":""`, `"owner":"team é"`},
	{`"owner":""`, `"owner":"team \u2028"`},
	{`"owner":""`, "\"owner\":\"team \u2028\""},
	{`"owner":""`, "\"owner\":\"team \xff\""},
	{`"owner":""`, `"owner":"team \/ \u0041 \b \uFFFD \ud800"`},
	{`"owner":""`, `"owner":null`},
	{`"labels":{}`, `"labels":{"b":"2","a":"1","a":"3"}`},
	{`"labels":{}`, `"labels":{"a":1}`},
	{`"labels":{}`, `"labels":null`},
	{`"raised_at":"2026-09-30T22:15:30.000Z",`, ``},
	{`"raised_at":"2026-09-30T22:15:30.000Z"`, `"raised_at":"2026-09-30T22:15:30.000Z","resolved_at":"2026-09-30T23:00:00.000Z"`},
	{`"deadline":"2026-09-30T22:00:00.000Z"`, `"deadline":"soon"`},
	{`"status":"late","verdict":"not_identified","seq"`, `"status":"fine","verdict":"not_identified","seq"`},
	{`"status":"late","verdict":"not_identified","seq"`, `"status":"late","verdict":"maybe","seq"`},
	{`"status":"late","verdict":"not_identified","first_missing"`, `"status":"fine","verdict":"not_identified","first_missing"`},
	{`"status":"late","verdict":"not_identified","first_missing"`, `"status":"late","verdict":"maybe","first_missing"`},
	{`"status":"late","verdict":"not_identified","first_missing"`, `"status":"","verdict":"not_identified","first_missing"`},
	{`"first_missing":"signal_delivered","hypotheses"`, `"first_missing":"lunch","hypotheses"`},
	{`"first_missing":"signal_delivered","hypotheses"`, `"first_missing":"","hypotheses"`},
	{`"diagnosis":{"batch":"account-balance-snapshot.daily/2026-09-30/20260930"`, `"diagnosis":{"batch":"account-balance-snapshot.daily/2026-09-30/20260931"`},
	{`{"name":"not_produced","verdict":"excluded"`, `{"name":"not_producing","verdict":"excluded"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"2026-02-30T22:15:00.000Z"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"2024-02-29T23:59:59.999Z"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"2026-09-30T24:15:00.000Z"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"2026-09-30T22:15:60.000Z"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"2026-09-30T22:15:00Z"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"2026-09-30T22:15:00.000+00:00"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"0001-01-01T00:00:00.000Z"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"0000-01-01T00:00:00.000Z"`},
	{`"as_of":"2026-09-30T22:15:00.000Z"`, `"as_of":"yesterday"`},
	{`"at":"2026-09-30T17:14:05.010Z",`, `"at":"0001-01-01T00:00:00.000Z",`},
	{`"at":"2026-09-30T17:14:05.010Z",`, ``},
	{`"contract":"contracts/account-balance-snapshot.daily.yaml"`, `"contract":"contracts/account-balance-snapshot.daily.yaml","baseline":""`},
	{`"contract":"contracts/account-balance-snapshot.daily.yaml"`, `"contract":"contracts/account-balance-snapshot.daily.yaml","baseline":"p95 over 28 days"`},
	{`"required":true`, `"required":tru`},
	{`"required":true`, `"required":1`},
	{`"evidence":["abs-20260930-04","abs-20260930-03","abs-20260930-06"]`, `"evidence":null`},
	{`"evidence":["abs-20260930-04","abs-20260930-03","abs-20260930-06"]`, `"evidence":[]`},
	{`"evidence":["abs-20260930-04","abs-20260930-03","abs-20260930-06"]`, `"evidence":["abs-20260930-04",]`},
	{`"hypotheses":[`, `"hypotheses" :[`},
	{`"diagnosis":{`, `"diagnosis":{"extra":1,`},
	{`"diagnosis":{`, `"diagnosis":null,"x":{`},
	{`"fingerprint":`, `"some_new_field":[1,2],"fingerprint":`},
	{`"state":"open"`, `"State":"open"`},
	{`"state":"open"`, `"state":"open","state":"resolved"`},
}

// TestParseFindingFastPath: the fast path reads what encoding/json
// reads, and takes every record the detector writes.
func TestParseFindingFastPath(t *testing.T) {
	seeds := wireSeeds(t, 40)
	for i, s := range seeds {
		fast := sameAsJSON(t, s)
		if i < len(seeds)-len(wireEdits) && !fast {
			t.Errorf("a record the detector wrote is not read by the fast path:\n%.600s", s)
		}
		sameAsJSON(t, append(bytes.Clone(s), ' '))
		if len(s) > 1 {
			sameAsJSON(t, s[:len(s)-1])
			sameAsJSON(t, s[:len(s)/2])
		}
	}
}

// FuzzParseFindingFastPath: on any bytes the fast path and
// encoding/json agree (sameAsJSON).
func FuzzParseFindingFastPath(f *testing.F) {
	// The golden records and their edits only: generating records in
	// every fuzz worker would hold up the fuzzing.
	for _, s := range wireSeeds(f, 0) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsJSON(t, data)
	})
}

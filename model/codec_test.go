package model_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// typicalEvent is the example of docs/event-format.md.
const typicalEvent = `{"spec":"handoff/v1","event_id":"0b7f5c2e-6d1a-4c59-9b61-4a3c1f0e2d77","type":"artifact.transferred","time":"2026-10-01T01:20:05.120Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"exchange","component":"sftp-relay-2","object":"account_balance_snapshot_20260930.csv","rows":120345,"bytes":9876543,"checksum":"sha256:9f2c4a","attempt":1,"error":"","attrs":{"location":"/inbox/finance"}}`

// field is one member of a test message, its value as raw JSON.
type field struct{ key, raw string }

// drop as a raw value removes the field from the base message.
const drop = "\x00drop"

var baseFields = []field{
	{"spec", `"handoff/v1"`},
	{"event_id", `"e-1"`},
	{"type", `"job.succeeded"`},
	{"time", `"2026-10-01T01:20:05.120Z"`},
	{"pipeline", `"p.daily"`},
	{"business_date", `"2026-09-30"`},
	{"batch_id", `"20260930"`},
	{"system", `"producer"`},
}

// msg builds a message from baseFields with the given key, raw-value pairs
// replacing, removing (drop) or adding fields.
func msg(kv ...string) []byte {
	if len(kv)%2 != 0 {
		panic("msg: odd number of arguments")
	}
	fields := append([]field(nil), baseFields...)
next:
	for i := 0; i < len(kv); i += 2 {
		for j := range fields {
			if fields[j].key == kv[i] {
				fields[j].raw = kv[i+1]
				continue next
			}
		}
		fields = append(fields, field{kv[i], kv[i+1]})
	}
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, f := range fields {
		if f.raw == drop {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		fmt.Fprintf(&b, "%q:%s", f.key, f.raw)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// base is the Event that msg() with no arguments decodes to.
func base() model.Event {
	return model.Event{
		Spec:         model.SpecV1,
		ID:           "e-1",
		Type:         model.JobSucceeded,
		Time:         time.Date(2026, 10, 1, 1, 20, 5, 120e6, time.UTC),
		Pipeline:     "p.daily",
		BusinessDate: model.MustParseDate("2026-09-30"),
		BatchID:      "20260930",
		System:       model.Producer,
	}
}

// with returns base() changed by f.
func with(f func(*model.Event)) model.Event {
	e := base()
	f(&e)
	return e
}

// diffEvents returns "" when a and b are the same event, or a description
// of how they differ. Times must be equal instants, both in UTC.
func diffEvents(a, b model.Event) string {
	if !a.Time.Equal(b.Time) || a.Time.Location() != b.Time.Location() {
		return fmt.Sprintf("time %s (%s) != %s (%s)", a.Time, a.Time.Location(), b.Time, b.Time.Location())
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("\n got %+v\nwant %+v", a, b)
	}
	return ""
}

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want model.Event
	}{
		{"typical", []byte(typicalEvent), model.Event{
			Spec: model.SpecV1, ID: "0b7f5c2e-6d1a-4c59-9b61-4a3c1f0e2d77", Type: model.ArtifactTransferred,
			Time:     time.Date(2026, 10, 1, 1, 20, 5, 120e6, time.UTC),
			Pipeline: "account-balance-snapshot.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930",
			System: model.Exchange, Component: "sftp-relay-2", Object: "account_balance_snapshot_20260930.csv",
			Rows: 120345, HasRows: true, Bytes: 9876543, HasBytes: true, Checksum: "sha256:9f2c4a",
			Attempt: 1, HasAttempt: true, Attrs: map[string]string{"location": "/inbox/finance"},
		}},
		{"job.started", msg("type", `"job.started"`), with(func(e *model.Event) { e.Type = model.JobStarted })},
		{"job.succeeded", msg(), base()},
		{"job.failed", msg("type", `"job.failed"`, "error", `"exit 1"`), with(func(e *model.Event) {
			e.Type, e.Error = model.JobFailed, "exit 1"
		})},
		{"artifact.staged", msg("type", `"artifact.staged"`, "object", `"f.csv.tmp"`), with(func(e *model.Event) {
			e.Type, e.Object = model.ArtifactStaged, "f.csv.tmp"
		})},
		{"artifact.finalized with zero rows", msg("type", `"artifact.finalized"`, "object", `"f.csv"`, "rows", `0`), with(func(e *model.Event) {
			e.Type, e.Object, e.HasRows = model.ArtifactFinalized, "f.csv", true
		})},
		{"artifact.transferred", msg("type", `"artifact.transferred"`, "object", `"f.csv"`, "system", `"exchange"`), with(func(e *model.Event) {
			e.Type, e.Object, e.System = model.ArtifactTransferred, "f.csv", model.Exchange
		})},
		{"signal.published", msg("type", `"signal.published"`, "object", `"f.flag"`), with(func(e *model.Event) {
			e.Type, e.Object = model.SignalPublished, "f.flag"
		})},
		{"signal.transferred", msg("type", `"signal.transferred"`, "object", `"f.flag"`, "system", `"exchange"`), with(func(e *model.Event) {
			e.Type, e.Object, e.System = model.SignalTransferred, "f.flag", model.Exchange
		})},
		{"signal.restored", msg("type", `"signal.restored"`, "object", `"f.flag"`, "system", `"operator"`), with(func(e *model.Event) {
			e.Type, e.Object, e.System = model.SignalRestored, "f.flag", model.Operator
		})},
		{"batch.identified", msg("type", `"batch.identified"`, "system", `"consumer"`), with(func(e *model.Event) {
			e.Type, e.System = model.BatchIdentified, model.Consumer
		})},
		{"consume.started", msg("type", `"consume.started"`, "system", `"consumer"`, "attempt", `2`), with(func(e *model.Event) {
			e.Type, e.System, e.Attempt, e.HasAttempt = model.ConsumeStarted, model.Consumer, 2, true
		})},
		{"consume.succeeded", msg("type", `"consume.succeeded"`, "system", `"consumer"`, "rows", `120345`), with(func(e *model.Event) {
			e.Type, e.System, e.Rows, e.HasRows = model.ConsumeSucceeded, model.Consumer, 120345, true
		})},
		{"consume.failed", msg("type", `"consume.failed"`, "system", `"consumer"`, "error", `"table locked"`), with(func(e *model.Event) {
			e.Type, e.System, e.Error = model.ConsumeFailed, model.Consumer, "table locked"
		})},
		{"heartbeat without batch fields", msg("type", `"process.heartbeat"`, "business_date", drop, "batch_id", drop, "system", `"consumer"`, "component", `"consumer-1"`),
			with(func(e *model.Event) {
				e.Type, e.System, e.Component = model.ProcessHeartbeat, model.Consumer, "consumer-1"
				e.BusinessDate, e.BatchID = model.Date{}, ""
			})},
		{"offset converted to UTC and truncated to ms", msg("time", `"2026-10-01T09:20:05.1209999+08:00"`), base()},
		{"seconds without fraction", msg("time", `"2026-10-01T01:20:05Z"`), with(func(e *model.Event) {
			e.Time = time.Date(2026, 10, 1, 1, 20, 5, 0, time.UTC)
		})},
		{"unknown top-level fields kept in attrs, explicit attrs win", msg("region", `"cn-east"`, "location", `"/from-top"`, "attrs", `{"location":"/inbox"}`),
			with(func(e *model.Event) { e.Attrs = map[string]string{"region": "cn-east", "location": "/inbox"} })},
		{"non-string attrs kept as compact JSON", msg("attrs", `{"n": 12, "f": 1.5, "b": true, "z": null, "a": [1, "x"], "o": {"k": "v\u0001"}}`, "top", `{ "x" : [ ] }`),
			with(func(e *model.Event) {
				e.Attrs = map[string]string{"n": "12", "f": "1.5", "b": "true", "z": "null", "a": `[1,"x"]`, "o": `{"k":"v\u0001"}`, "top": `{"x":[]}`}
			})},
		{"null fields treated as absent", msg("component", `null`, "object", `null`, "rows", `null`, "bytes", `null`, "attempt", `null`, "error", `null`, "attrs", `null`, "unknown", `null`), base()},
		{"invalid UTF-8 in attrs becomes U+FFFD", msg("attrs", "{\"a\":\"x\xff\",\"b\":[\"\xff\\u0001\"]}"),
			with(func(e *model.Event) { e.Attrs = map[string]string{"a": "x\uFFFD", "b": "[\"\uFFFD\\u0001\"]"} })},
		{"empty attrs leave Attrs nil", msg("attrs", `{}`), base()},
		{"escaped strings", msg("event_id", `"e\u002d1"`, "checksum", `"sha256:\"q\""`), with(func(e *model.Event) { e.Checksum = `sha256:"q"` })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := model.Decode(tt.in)
			if err != nil {
				t.Fatalf("Decode(%s): %v", tt.in, err)
			}
			if diff := diffEvents(got, tt.want); diff != "" {
				t.Errorf("Decode(%s): %s", tt.in, diff)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	tooLarge := msg("attrs", `{"pad":"`+strings.Repeat("x", model.MaxEventSize)+`"}`)
	tests := []struct {
		name  string
		in    []byte
		kind  model.RejectKind
		field string
		err   string // Error() text; a trailing "*" matches any suffix
	}{
		{"empty", []byte(``), model.RejectBadJSON, "", "not valid JSON: *"},
		{"bad JSON", []byte(`{"spec":`), model.RejectBadJSON, "", "not valid JSON: *"},
		{"trailing garbage", append(msg(), 'x'), model.RejectBadJSON, "", "not valid JSON: *"},
		{"number JSON does not allow", msg("rows", `+5`), model.RejectBadJSON, "", `not valid JSON: bad number "+5"`},
		{"leading zero", msg("bytes", `05`), model.RejectBadJSON, "", `not valid JSON: bad number "05"`},
		{"nan in an unknown field", msg("extra", `nan`), model.RejectBadJSON, "", `not valid JSON: bad number "nan"`},
		{"bad number deep in attrs", msg("attrs", `{"a":[{"b":1.}]}`), model.RejectBadJSON, "", `not valid JSON: bad number "1."`},
		{"array", []byte(`[1,2]`), model.RejectBadJSON, "", "not a JSON object"},
		{"string", []byte(`"event"`), model.RejectBadJSON, "", "not a JSON object"},
		{"too large", tooLarge, model.RejectTooLarge, "", fmt.Sprintf("message of %d bytes is over the 1048576-byte limit", len(tooLarge))},
		{"unknown type", msg("type", `"job.exploded"`), model.RejectUnknownType, "type", `type "job.exploded": unknown event type`},
		{"unknown type wins over a bad date", msg("type", `"job.exploded"`, "business_date", `"x"`), model.RejectUnknownType, "type", `type "job.exploded": unknown event type`},
		{"bad spec", msg("spec", `"handoff/v2"`), model.RejectBadSpec, "spec", `spec "handoff/v2": unsupported spec version (want handoff/v1)`},
		{"missing spec", msg("spec", drop), model.RejectMissingField, "spec", "spec: required field is missing"},
		{"missing event_id", msg("event_id", drop), model.RejectMissingField, "event_id", "event_id: required field is missing"},
		{"empty event_id", msg("event_id", `""`), model.RejectMissingField, "event_id", "event_id: required field is missing"},
		{"missing type", msg("type", drop), model.RejectMissingField, "type", "type: required field is missing"},
		{"missing time", msg("time", drop), model.RejectMissingField, "time", "time: required field is missing"},
		{"null time", msg("time", `null`), model.RejectMissingField, "time", "time: required field is missing"},
		{"missing pipeline", msg("pipeline", drop), model.RejectMissingField, "pipeline", "pipeline: required field is missing"},
		{"missing system", msg("system", drop), model.RejectMissingField, "system", "system: required field is missing"},
		{"missing business_date", msg("business_date", drop), model.RejectMissingField, "business_date", "business_date: required field is missing"},
		{"missing batch_id", msg("batch_id", drop), model.RejectMissingField, "batch_id", "batch_id: required field is missing"},
		{"artifact without object", msg("type", `"artifact.finalized"`, "rows", `1`), model.RejectMissingField, "object", "object: required field is missing"},
		{"artifact.staged without object", msg("type", `"artifact.staged"`), model.RejectMissingField, "object", "object: required field is missing"},
		{"signal without object", msg("type", `"signal.restored"`), model.RejectMissingField, "object", "object: required field is missing"},
		{"artifact.finalized without rows", msg("type", `"artifact.finalized"`, "object", `"f.csv"`), model.RejectMissingField, "rows", "rows: required field is missing"},
		{"consume.succeeded without rows", msg("type", `"consume.succeeded"`), model.RejectMissingField, "rows", "rows: required field is missing"},
		{"job.failed without error", msg("type", `"job.failed"`), model.RejectMissingField, "error", "error: required field is missing"},
		{"consume.failed with empty error", msg("type", `"consume.failed"`, "error", `""`), model.RejectMissingField, "error", "error: required field is missing"},
		{"heartbeat without component", msg("type", `"process.heartbeat"`, "business_date", drop, "batch_id", drop), model.RejectMissingField, "component", "component: required field is missing"},
		{"bad month", msg("business_date", `"2026-13-01"`), model.RejectBadValue, "business_date", `business_date "2026-13-01": month out of range`},
		{"bad day", msg("business_date", `"2026-02-29"`), model.RejectBadValue, "business_date", `business_date "2026-02-29": day out of range`},
		{"bad date layout", msg("business_date", `"20260930"`), model.RejectBadValue, "business_date", `business_date "20260930": want YYYY-MM-DD`},
		{"bad time", msg("time", `"2026-10-01 01:20:05"`), model.RejectBadValue, "time", `time "2026-10-01 01:20:05": want RFC 3339, like 2026-10-01T01:20:05.120Z`},
		{"time without zone", msg("time", `"2026-10-01T01:20:05"`), model.RejectBadValue, "time", `time "2026-10-01T01:20:05": want RFC 3339, like 2026-10-01T01:20:05.120Z`},
		{"time as number", msg("time", `1759281605120`), model.RejectBadValue, "time", `time "1759281605120": must be a JSON string`},
		{"pipeline as number", msg("pipeline", `42`), model.RejectBadValue, "pipeline", `pipeline "42": must be a JSON string`},
		{"batch_id as number", msg("batch_id", `20260930`), model.RejectBadValue, "batch_id", `batch_id "20260930": must be a JSON string`},
		{"rows as string", msg("rows", `"7"`), model.RejectBadValue, "rows", `rows "\"7\"": must be a whole number`},
		{"rows as fraction", msg("rows", `1.5`), model.RejectBadValue, "rows", `rows "1.5": must be a whole number`},
		{"bytes too big", msg("bytes", `9223372036854775808`), model.RejectBadValue, "bytes", `bytes "9223372036854775808": must be a whole number`},
		{"attempt as bool", msg("attempt", `true`), model.RejectBadValue, "attempt", `attempt "true": must be a whole number`},
		{"attrs as array", msg("attrs", `["a"]`), model.RejectBadValue, "attrs", `attrs "[\"a\"]": must be a JSON object`},
		{"negative rows", msg("type", `"consume.succeeded"`, "rows", `-1`), model.RejectBadValue, "rows", `rows "-1": must not be negative`},
		{"negative bytes", msg("bytes", `-5`), model.RejectBadValue, "bytes", `bytes "-5": must not be negative`},
		{"negative attempt", msg("attempt", `-1`), model.RejectBadValue, "attempt", `attempt "-1": must not be negative`},
		{"slash in pipeline", msg("pipeline", `"a/b"`), model.RejectBadValue, "pipeline", `pipeline "a/b": must not contain '/', spaces or control characters`},
		{"space in batch_id", msg("batch_id", `"2026 09 30"`), model.RejectBadValue, "batch_id", `batch_id "2026 09 30": must not contain '/', spaces or control characters`},
		{"unknown system", msg("system", `"warehouse"`), model.RejectBadValue, "system", `system "warehouse": unknown system (want producer, exchange, consumer or operator)`},
		{"invalid UTF-8", msg("object", "\"\xff\""), model.RejectBadValue, "object", `object "\xff": not valid UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.Decode(tt.in)
			checkRejected(t, "Decode", err, tt.kind, tt.field, tt.err)
		})
	}
}

// checkRejected checks that err is a *ValidationError of kind for field
// whose text is want; a trailing "*" in want matches any suffix.
func checkRejected(t *testing.T, what string, err error, kind model.RejectKind, field, want string) {
	t.Helper()
	var ve *model.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("%s: got error %v (%T), want a *ValidationError", what, err, err)
	}
	if ve.Kind != kind || ve.Field != field {
		t.Errorf("%s: got kind %q field %q, want kind %q field %q (%v)", what, ve.Kind, ve.Field, kind, field, err)
	}
	if prefix, ok := strings.CutSuffix(want, "*"); ok {
		if !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%s: error\n %q\nwant prefix\n %q", what, err, prefix)
		}
	} else if err.Error() != want {
		t.Errorf("%s: error\n got %q\nwant %q", what, err, want)
	}
}

func TestDecodeWithFill(t *testing.T) {
	in := msg("event_id", drop)
	got, err := new(model.Decoder).DecodeWith(in, func(e *model.Event) {
		if e.ID == "" {
			e.ID = "filled"
		}
	})
	if err != nil {
		t.Fatalf("DecodeWith: %v", err)
	}
	if got.ID != "filled" {
		t.Errorf("DecodeWith: ID = %q, want %q", got.ID, "filled")
	}
	_, err = new(model.Decoder).DecodeWith(in, func(e *model.Event) { e.ID = "" })
	var ve *model.ValidationError
	if !errors.As(err, &ve) || ve.Field != "event_id" {
		t.Errorf("DecodeWith with an empty fill: got %v, want a missing event_id", err)
	}
}

func TestDecoderReuse(t *testing.T) {
	// A Decoder reuses its buffers: an earlier event must not change when a
	// later one is decoded.
	var d model.Decoder
	first, err := d.Decode([]byte(typicalEvent))
	if err != nil {
		t.Fatal(err)
	}
	want := first
	want.Attrs = map[string]string{"location": "/inbox/finance"}
	if _, err := d.Decode(msg("event_id", `"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"`, "attrs", `{"location":"/elsewhere/entirely"}`)); err != nil {
		t.Fatal(err)
	}
	if diff := diffEvents(first, want); diff != "" || first.ID != "0b7f5c2e-6d1a-4c59-9b61-4a3c1f0e2d77" {
		t.Errorf("first event changed after reuse: %s %q", diff, first.ID)
	}
}

func TestRoundTrip(t *testing.T) {
	inputs := []string{
		typicalEvent,
		string(msg()),
		string(msg("type", `"process.heartbeat"`, "business_date", drop, "batch_id", drop, "component", `"c"`, "system", `"consumer"`)),
		string(msg("type", `"consume.failed"`, "error", `"line1\nline2\t\"q\" \\ \u0001 é"`, "attrs", `{"o":{"k":[1,2]},"s":"x"}`, "extra", `7`)),
		string(msg("type", `"artifact.finalized"`, "object", `"f.csv"`, "rows", `0`, "bytes", `0`, "attempt", `0`, "time", `"2026-10-01T23:59:59.999999+14:00"`)),
	}
	for _, in := range inputs {
		e, err := model.Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", in, err)
		}
		enc := e.AppendJSON(nil)
		e2, err := model.Decode(enc)
		if err != nil {
			t.Fatalf("Decode(AppendJSON) of %s: %v\nencoding: %s", in, err, enc)
		}
		if diff := diffEvents(e2, e); diff != "" {
			t.Errorf("round trip of %s: %s\nencoding: %s", in, diff, enc)
		}
		// The canonical encoding is a fixed point.
		if enc2 := e2.AppendJSON(nil); string(enc2) != string(enc) {
			t.Errorf("encoding is not canonical:\n%s\n%s", enc, enc2)
		}
	}
}

func TestAppendJSON(t *testing.T) {
	e := with(func(e *model.Event) {
		e.Type, e.Object, e.Rows, e.HasRows = model.ArtifactFinalized, "f.csv", 0, true
		e.Attrs = map[string]string{"b": "2", "a": "1"}
	})
	want := `{"spec":"handoff/v1","event_id":"e-1","type":"artifact.finalized","time":"2026-10-01T01:20:05.120Z","pipeline":"p.daily","business_date":"2026-09-30","batch_id":"20260930","system":"producer","object":"f.csv","rows":0,"attrs":{"a":"1","b":"2"}}`
	if got := string(e.AppendJSON(nil)); got != want {
		t.Errorf("AppendJSON:\n got %s\nwant %s", got, want)
	}
	b, err := e.MarshalJSON()
	if err != nil || string(b) != want {
		t.Errorf("MarshalJSON = %s, %v; want %s", b, err, want)
	}
	var u model.Event
	if err := u.UnmarshalJSON([]byte(want)); err != nil {
		t.Fatalf("UnmarshalJSON: %v", err)
	}
	if diff := diffEvents(u, e); diff != "" {
		t.Errorf("UnmarshalJSON: %s", diff)
	}
	if err := u.UnmarshalJSON(msg("type", `"nope"`)); err == nil {
		t.Error("UnmarshalJSON of an unknown type: got nil error")
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"2026-10-01T01:20:05.120Z", time.Date(2026, 10, 1, 1, 20, 5, 120e6, time.UTC), false},
		{"2026-10-01T09:20:05.120999+08:00", time.Date(2026, 10, 1, 1, 20, 5, 120e6, time.UTC), false},
		{"2026-09-30T20:00:00-05:00", time.Date(2026, 10, 1, 1, 0, 0, 0, time.UTC), false},
		{"2026-10-01", time.Time{}, true},
		{"", time.Time{}, true},
		{"9999-12-31T23:00:00-02:00", time.Time{}, true}, // year 10000 in UTC
		{"0000-01-01T00:00:00+01:00", time.Time{}, true}, // year -1 in UTC
	}
	for _, tt := range tests {
		got, err := model.ParseTime(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseTime(%q): error %v, want error: %v", tt.in, err, tt.err)
			continue
		}
		if !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, want %v in UTC", tt.in, got, tt.want)
		}
	}
}

package model_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// TestStorableBounds checks the exported bounds against the calendar: the
// sink and the docs quote them as dates.
func TestStorableBounds(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  string
		want string
	}{
		{"MinBusinessDay", model.DateFromDays(model.MinBusinessDay).String(), "1970-01-02"},
		{"MaxBusinessDay", model.DateFromDays(model.MaxBusinessDay).String(), "2105-12-31"},
		{"MinTimeMillis", time.UnixMilli(model.MinTimeMillis).UTC().Format(model.TimeLayout), "1970-01-01T00:00:00.000Z"},
		{"MaxTimeMillis", time.UnixMilli(model.MaxTimeMillis).UTC().Format(model.TimeLayout), "2105-12-31T23:59:59.999Z"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s is %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

// TestStorableDates checks that Decode and Validate accept exactly the
// business dates and times ClickHouse stores faithfully.
func TestStorableDates(t *testing.T) {
	const (
		dateReason = `: outside 1970-01-02..2105-12-31, the dates ClickHouse stores (1970-01-01 marks heartbeats)`
		timeReason = `: outside 1970-01-01T00:00:00Z..2105-12-31T23:59:59.999Z, the times ClickHouse stores`
	)
	tests := []struct {
		date           string
		dateOK, timeOK bool
	}{
		{"0001-01-01", false, false},
		{"1970-01-01", false, true},
		{"1970-01-02", true, true},
		{"2105-12-31", true, true},
		{"2106-01-01", false, false},
		{"2150-06-01", false, false},
		{"9999-12-31", false, false},
	}
	for _, tt := range tests {
		t.Run("business_date "+tt.date, func(t *testing.T) {
			in := msg("business_date", `"`+tt.date+`"`)
			_, err := model.Decode(in)
			want := ""
			if !tt.dateOK {
				want = `business_date "` + tt.date + `"` + dateReason
			}
			checkErr(t, "Decode", err, "business_date", want)
			d, perr := model.ParseDate(tt.date)
			if perr != nil {
				t.Fatal(perr)
			}
			e := with(func(e *model.Event) { e.BusinessDate = d })
			checkErr(t, "Validate", e.Validate(), "business_date", want)
		})
		t.Run("time "+tt.date, func(t *testing.T) {
			s := tt.date + "T00:00:00Z"
			_, err := model.Decode(msg("time", `"`+s+`"`))
			want := ""
			if !tt.timeOK {
				want = `time "` + s + `"` + timeReason
			}
			checkErr(t, "Decode", err, "time", want)
			tm, perr := time.Parse(time.RFC3339, s)
			if perr != nil {
				t.Fatal(perr)
			}
			e := with(func(e *model.Event) { e.Time = tm })
			if tm.IsZero() {
				// In an event built in code, the zero time is an unset one.
				var ve *model.ValidationError
				if err := e.Validate(); !errors.As(err, &ve) || ve.Kind != model.RejectMissingField || ve.Field != "time" {
					t.Errorf("Validate of the zero time: %v, want time missing", err)
				}
				return
			}
			if !tt.timeOK {
				want = `time "` + tt.date + `T00:00:00.000Z"` + timeReason
			}
			checkErr(t, "Validate", e.Validate(), "time", want)
		})
	}
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{"1969-12-31T23:59:59.999Z", false},
		{"1970-01-01T08:00:00+08:00", true},
		{"1970-01-01T07:59:59.999+08:00", false},
		{"2105-12-31T23:59:59.999Z", true},
		{"2105-12-31T23:59:59.9999Z", true}, // truncated to the millisecond
		{"2106-01-01T07:59:59+08:00", true},
		{"2106-01-01T00:00:00Z", false},
	} {
		want := ""
		if !tt.ok {
			want = `time "` + tt.s + `"` + timeReason
		}
		_, err := model.Decode(msg("time", `"`+tt.s+`"`))
		checkErr(t, "Decode "+tt.s, err, "time", want)
	}
}

// checkErr checks that err is nil when want is "", and otherwise a
// *ValidationError of kind bad_value for field with the text want.
func checkErr(t *testing.T, what string, err error, field, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("%s: %v, want no error", what, err)
		}
		return
	}
	checkRejected(t, what, err, model.RejectBadValue, field, want)
}

// TestAttrsLimits checks the caps on attrs in Decode (explicit attrs and
// unknown top-level fields, which land in attrs) and in Validate.
func TestAttrsLimits(t *testing.T) {
	attrs := func(n, valueLen int) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%03d":"%s"`, i, strings.Repeat("v", valueLen))
		}
		b.WriteByte('}')
		return b.String()
	}
	// unknown returns n unknown top-level fields as key, raw-value pairs.
	unknown := func(n int) []string {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf("u%03d", i), `"v"`)
		}
		return kv
	}
	const tooMany = "attrs: 257 attrs, over the limit of 256 per event"
	const tooBig = "attrs: 65537 bytes of attr keys and values, over the limit of 65536 per event"
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"256 attrs", msg("attrs", attrs(256, 1)), ""},
		{"257 attrs", msg("attrs", attrs(257, 1)), tooMany},
		{"256 unknown fields", msg(unknown(256)...), ""},
		{"257 unknown fields", msg(unknown(257)...), tooMany},
		{"200 attrs and 57 unknown fields", msg(append(unknown(57), "attrs", attrs(200, 1))...), tooMany},
		// k000 is in both: explicit attrs win, and it counts once.
		{"256 attrs and an unknown field of the same name", msg("attrs", attrs(256, 1), "k000", `"top"`), ""},
		{"65536 bytes", msg("attrs", `{"k":"`+strings.Repeat("x", 65535)+`"}`), ""},
		{"65537 bytes", msg("attrs", `{"k":"`+strings.Repeat("x", 65536)+`"}`), tooBig},
		{"65537 bytes with an unknown field", msg("attrs", `{"k":"`+strings.Repeat("x", 65533)+`"}`, "u", `"ab"`), tooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.Decode(tt.in)
			checkErr(t, "Decode", err, "attrs", tt.want)
		})
	}
	e := base()
	e.Attrs = map[string]string{}
	for i := range model.MaxAttrs + 1 {
		e.Attrs[fmt.Sprint(i)] = ""
	}
	checkErr(t, "Validate", e.Validate(), "attrs", tooMany)
	e.Attrs = map[string]string{"kk": strings.Repeat("x", model.MaxAttrsBytes-1)}
	checkErr(t, "Validate", e.Validate(), "attrs", "attrs: 65537 bytes of attr keys and values, over the limit of 65536 per event")
}

// TestDecodeStrictJSON covers what RFC 8259 forbids or leaves ambiguous and
// a lenient parser accepts: raw control characters in strings, lone
// surrogate escapes, and duplicate keys (last wins) in an audit record.
func TestDecodeStrictJSON(t *testing.T) {
	const head = `{"spec":"handoff/v1","event_id":"e-1","type":"job.succeeded","time":"2026-10-01T01:20:05.120Z","pipeline":"p.daily","business_date":"2026-09-30","batch_id":"20260930","system":"producer"`
	tests := []struct {
		name  string
		in    string
		kind  model.RejectKind
		field string
		err   string // "" for accepted; a trailing "*" matches any suffix
	}{
		{"raw NUL in a field", head + ",\"checksum\":\"a\x00b\"}", model.RejectBadJSON, "",
			`not valid JSON: raw control character 0x00 inside a string at byte 200 (RFC 8259: write it as \u0000)`},
		{"raw tab in a field", head + ",\"error\":\"a\tb\"}", model.RejectBadJSON, "", `not valid JSON: raw control character 0x09 inside a string at byte 197*`},
		{"raw 0x1f in an attr key", head + ",\"attrs\":{\"a\x1f\":\"v\"}}", model.RejectBadJSON, "", `not valid JSON: raw control character 0x1f inside a string*`},
		{"raw newline in a nested attr value", head + ",\"attrs\":{\"a\":[\"x\ny\"]}}", model.RejectBadJSON, "", `not valid JSON: raw control character 0x0a inside a string*`},
		{"raw NUL in an unknown field", head + ",\"x\":\"\x00\"}", model.RejectBadJSON, "", `not valid JSON: raw control character 0x00 inside a string*`},
		{"escaped control characters", head + `,"error":"a\u0000\t\n","attrs":{"k\u001f":"\u0001"}}`, "", "", ""},
		{"white space between tokens", "{\n\t\"spec\" :\r\n\"handoff/v1\"" + head[len(`{"spec":"handoff/v1"`):] + "\n}\n", "", "", ""},
		{"lone high surrogate", head + `,"checksum":"\ud800x"}`, model.RejectBadJSON, "", `not valid JSON: lone surrogate \ud800 inside a string at byte 199: not a Unicode character`},
		{"lone low surrogate in attrs", head + `,"attrs":{"a":"\uDC00"}}`, model.RejectBadJSON, "", `not valid JSON: lone surrogate \uDC00 inside a string*`},
		{"two high surrogates", head + `,"object":"\ud83d\ud83d"}`, model.RejectBadJSON, "", `not valid JSON: lone surrogate \ud83d inside a string*`},
		{"high surrogate at the end of a string", head + `,"object":"\ud83d"}`, model.RejectBadJSON, "", `not valid JSON: lone surrogate \ud83d inside a string*`},
		{"surrogate pair", head + `,"object":"\ud83d\ude00","attrs":{"\uD83D\uDE00":"x"}}`, "", "", ""},
		{"escaped backslash before u", head + `,"object":"\\ud800"}`, "", "", ""},
		{"duplicate known key", head + `,"batch_id":"20260929"}`, model.RejectBadValue, "batch_id",
			`batch_id: duplicate key: the message states it twice and which value holds is ambiguous`},
		{"duplicate key, first null", head + `,"rows":null,"rows":5}`, model.RejectBadValue, "rows", `rows: duplicate key*`},
		{"duplicate unknown key", head + `,"region":"a","region":"b"}`, model.RejectBadValue, "region", `region: duplicate key*`},
		{"duplicate attrs", head + `,"attrs":{},"attrs":{"a":"1"}}`, model.RejectBadValue, "attrs", `attrs: duplicate key*`},
		{"duplicate among many unknown keys", head + manyUnknown(40) + `,"u007":1}`, model.RejectBadValue, "u007", `u007: duplicate key*`},
		{"duplicate key inside attrs", head + `,"attrs":{"a":"1","b":"2","a":"3"}}`, model.RejectBadValue, "attrs",
			`attrs "a": duplicate key: the message states it twice and which value holds is ambiguous`},
		{"escape JSON does not define", head + `,"object":"a\qb"}`, model.RejectBadJSON, "", `not valid JSON: bad escape "\\q" inside a string at byte 198`},
		{"short unicode escape", head + `,"object":"\u12"}`, model.RejectBadJSON, "", `not valid JSON: bad escape "\\u12\"}" inside a string at byte 197`},
		{"unknown key equal to an attrs key is not a duplicate", head + `,"a":"top","attrs":{"a":"inner"}}`, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.Decode([]byte(tt.in))
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Decode(%q): %v", tt.in, err)
				}
				return
			}
			checkRejected(t, "Decode", err, tt.kind, tt.field, tt.err)
		})
	}
}

// manyUnknown returns n unknown top-level members u000, u001, ... as JSON
// text to append to an object.
func manyUnknown(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"u%03d":%d`, i, i)
	}
	return b.String()
}

// TestZeroTimeIsABadValue checks that a time that is there but cannot be
// stored is reported as such, not as a missing field.
func TestZeroTimeIsABadValue(t *testing.T) {
	_, err := model.Decode(msg("time", `"0001-01-01T00:00:00Z"`))
	checkErr(t, "Decode", err, "time", `time "0001-01-01T00:00:00Z": outside 1970-01-01T00:00:00Z..2105-12-31T23:59:59.999Z, the times ClickHouse stores`)
}

// TestControlCharacterAtEveryPosition moves one raw control character
// through a string of every length around the word sizes the scan uses,
// so that no position escapes it.
func TestControlCharacterAtEveryPosition(t *testing.T) {
	for n := 1; n <= 40; n++ {
		for pos := 0; pos < n; pos++ {
			for _, c := range []byte{0x00, 0x01, 0x09, 0x1f} {
				s := []byte(strings.Repeat("\x7f", n)) // 0x7f is allowed raw
				s[pos] = c
				in := msg("checksum", `"`+string(s)+`"`)
				_, err := model.Decode(in)
				var ve *model.ValidationError
				if !errors.As(err, &ve) || ve.Kind != model.RejectBadJSON || !strings.Contains(err.Error(), fmt.Sprintf("raw control character 0x%02x", c)) {
					t.Fatalf("Decode(%q): %v, want a raw control character 0x%02x rejected", in, err, c)
				}
			}
			s := []byte(strings.Repeat(" ", n))
			s[pos] = 0x20
			if _, err := model.Decode(msg("checksum", `"`+string(s)+`"`)); err != nil {
				t.Fatalf("Decode of spaces: %v", err)
			}
		}
	}
}

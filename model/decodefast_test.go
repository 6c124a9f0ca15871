package model

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzDecodeFast is the differential test of the decoder's fast path: for
// any input the fast path takes, the general path accepts it too and
// decodes the same event and attrs (inputs it does not take go the
// general way, as before). FuzzDecode and FuzzDecodeView check the whole
// decoder.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range fastSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFast(t, data)
	})
}

// checkFast compares parseFast of data with parseGeneral when the fast
// path takes data; it reports whether it did.
func checkFast(t *testing.T, data []byte) bool {
	t.Helper()
	checkPlain(t, data)
	var fast, general Decoder
	if len(data) > MaxEventSize || !fast.parseFast(data) {
		return false
	}
	if err := general.parseGeneral(data); err != nil {
		t.Fatalf("the fast path took a message the general one rejects (%v)\ninput: %q", err, data)
	}
	// == compares the times' internal form too.
	if fast.ev.Time != general.ev.Time || fmt.Sprintf("%#v", fast.ev) != fmt.Sprintf("%#v", general.ev) {
		t.Fatalf("fast path event %#v\ngeneral path  %#v\ninput: %q", fast.ev, general.ev, data)
	}
	if !slices.Equal(fast.attrKeys, general.attrKeys) || !slices.Equal(fast.attrVs, general.attrVs) {
		t.Fatalf("fast path attrs %q=%q, general path %q=%q\ninput: %q", fast.attrKeys, fast.attrVs, general.attrKeys, general.attrVs, data)
	}
	return true
}

func fastSeeds() []string {
	const base = `{"spec":"handoff/v1","event_id":"e1","type":"artifact.finalized","time":"2026-10-01T01:00:00.123Z","pipeline":"p","business_date":"2026-09-30","batch_id":"b","system":"producer","object":"f.csv","rows":1200`
	return []string{
		base + `}`,
		base + `,"bytes":0,"attempt":-0,"checksum":"sha256:ab","error":"","component":"c"}`,
		base + `,"attrs":{"b":"2","a":1.5e3,"c":true,"d":null,"e":false,"f":-0}}`,
		base + `,"attrs":{}}`,
		base + `,"attrs":null,"bytes":null}`,
		base + `,"attrs":{"é":"ü😀"}}`,
		base + `,"attrs":{"a":"1","a":"2"}}`,
		base + `,"attrs":{"a":01}}`,
		base + `,"attrs":{"a":1.}}`,
		base + `,"attrs":"x"}`,
		base + `,"attrs":{"a":[1]}}`,
		base + `,"rows":1}`,
		base + `,"bytes":1.0}`,
		base + `,"bytes":1e3}`,
		base + `,"bytes":999999999999999999}`,
		base + `,"bytes":9999999999999999999}`,
		base + `,"bytes":0123}`,
		base + `,"extra":"x"}`,
		base + `,"object":"a\"b"}`,
		base + `,"error":"a` + "\x01" + `b"}`,
		base + `,"error":"` + "\xff" + `"}`,
		base + `,"error":"a` + "\x7f" + `b"}`,
		base + `, "bytes":1}`,
		base + "}\n",
		`{"spec":"handoff/v2","type":"job.exploded","time":"nope","business_date":"2026-13-01"}`,
		`{"spec":"handoff/v1","event_id":"h1","type":"process.heartbeat","time":"2026-10-01T01:00:00+08:00","pipeline":"p","system":"consumer","component":"c1"}`,
		`{}`,
		`{"spec":null}`,
		`{"spec":"handoff/v1"`,
		`{"attrs":{}`,
		`{"attrs":{"a":"b"}`,
		`{"attrs":{"a":"b"}}`,
		`{"attrs":{"a":nul}}`,
		`{"rows":-}`,
		`{"rows":}`,
		`{"":""}`,
		`{"spec":"handoff/v1"}x}`,
		// Strings of every length around the eight-byte steps, with a
		// special byte at every position.
		`{"object":"abcdefg","error":"abcdefgh","checksum":"abcdefghi","component":"abcdefghijklmnopq"}`,
		`{"object":"abcdefg\","error":"abc\defgh"}`,
		`{"object":"abcdefgé","error":"abcdéfghijklmnop"}`,
		`{"object":"abcdefg` + "\x80" + `"}`,
		`{"object":"abcdefghijklmno` + "\x1f" + `"}`,
	}
}

// checkPlain checks plainMessage against a byte-by-byte reading of its
// definition and, for a plain message, the fast path's plain scan and
// validation against the scan and validation of any message: the same
// answer, event, attrs and error.
func checkPlain(t *testing.T, data []byte) {
	t.Helper()
	want := true
	for _, c := range data {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			want = false
		}
	}
	if got := plainMessage(data); got != want {
		t.Fatalf("plainMessage = %v, want %v\ninput: %q", got, want, data)
	}
	if !want || len(data) > MaxEventSize {
		return
	}
	var plain, any Decoder
	okPlain, okAny := plain.parseFastWith(data, true), any.parseFastWith(data, false)
	if okPlain != okAny {
		t.Fatalf("the plain scan took the message: %v, the scan of any message: %v\ninput: %q", okPlain, okAny, data)
	}
	if !okPlain {
		return
	}
	if plain.ev.Time != any.ev.Time || fmt.Sprintf("%#v", plain.ev) != fmt.Sprintf("%#v", any.ev) ||
		!slices.Equal(plain.attrKeys, any.attrKeys) || !slices.Equal(plain.attrVs, any.attrVs) {
		t.Fatalf("plain scan %#v %q=%q\nscan of any message %#v %q=%q\ninput: %q", plain.ev, plain.attrKeys, plain.attrVs,
			any.ev, any.attrKeys, any.attrVs, data)
	}
	errPlain, errAny := plain.ev.validate(true), any.ev.Validate()
	if fmt.Sprintf("%#v", errPlain) != fmt.Sprintf("%#v", errAny) {
		t.Fatalf("validation of a plain message: %#v, of any: %#v\ninput: %q", errPlain, errAny, data)
	}
}

// TestDecodePlain runs checkPlain over plain messages that differ from a
// valid one in one field: every text and name field empty, over-long,
// with DEL, a space, a slash or a control character (which make the
// message not plain), and the event of every type.
func TestDecodePlain(t *testing.T) {
	const head = `{"spec":"handoff/v1","event_id":"e1","type":"`
	const tail = `","time":"2026-10-01T01:00:00.123Z","pipeline":"p.daily","business_date":"2026-09-30","batch_id":"b1","system":"producer","component":"c1","object":"f.csv","rows":1200,"error":"boom"}`
	var cases []string
	for _, typ := range EventTypes {
		cases = append(cases, head+string(typ)+tail)
	}
	base := head + "artifact.finalized" + tail
	for _, f := range []string{"event_id", "pipeline", "batch_id", "component", "object", "error", "checksum"} {
		for _, v := range []string{"", "a b", "a/b", "a\x7fb", "a\x01b", "a\tb", strings.Repeat("x", 257), "é"} {
			cases = append(cases, strings.Replace(base, `"`+f+`":"`, `"`+f+`":"`+v, 1))
		}
	}
	plain := 0
	for _, c := range cases {
		if plainMessage([]byte(c)) {
			plain++
		}
		checkFast(t, []byte(c))
	}
	if plain < len(EventTypes)+20 {
		t.Errorf("%d of %d cases are plain messages; the test means most to be", plain, len(cases))
	}
}

// TestDecodeFast runs the differential check over the seeds, and checks
// that the events producers write take the fast path (the path exists
// for them).
func TestDecodeFast(t *testing.T) {
	for _, s := range fastSeeds() {
		checkFast(t, []byte(s))
	}
	for _, s := range fastSeeds()[:6] {
		if !checkFast(t, []byte(s)) {
			t.Errorf("the fast path did not take %q", s)
		}
	}
	e, err := Decode([]byte(fastSeeds()[2]))
	if err != nil {
		t.Fatal(err)
	}
	if enc := e.AppendJSON(nil); !checkFast(t, enc) {
		t.Errorf("the fast path did not take the canonical encoding %s", enc)
	}
}

// TestDecodeFastTimes compares the fast time and date parses with
// ParseTime and ParseDate, value and internal form, around the edges of
// months, years and the forms.
func TestDecodeFastTimes(t *testing.T) {
	var cases []string
	for _, d := range []string{"1970-01-01", "1969-12-31", "2000-02-29", "1900-02-29", "2024-02-29", "2023-02-29", "2026-12-31", "2026-13-01",
		"2026-00-10", "2026-04-31", "2026-04-30", "2105-12-31", "2106-01-01", "9999-12-31", "0000-01-01", "2026-1-01", "2026-01-1x", "+026-01-01"} {
		for _, c := range []string{"T00:00:00Z", "T23:59:59.999Z", "T24:00:00Z", "T12:60:00Z", "T12:00:60Z", "T12:00:00.1Z", "T12:00:00.123+00:00",
			"T12:00:00.123z", "t12:00:00Z", "T12:00:00,123Z", "T1a:00:00Z", "T12:00:00.12aZ"} {
			cases = append(cases, d+c)
		}
		if _, ok := parseDateFast([]byte(d)); ok {
			if want, err := ParseDate(d); err != nil || want != must(parseDateFast([]byte(d))) {
				t.Errorf("parseDateFast(%q) took a date ParseDate gives as %v, %v", d, want, err)
			}
		} else if _, err := ParseDate(d); err == nil && d[:4] >= "0001" {
			t.Errorf("parseDateFast(%q) did not take a valid date", d)
		}
	}
	fast := 0
	for _, c := range cases {
		got, ok := parseTimeFast([]byte(c))
		if !ok {
			continue
		}
		fast++
		want, err := ParseTime(c)
		if err != nil || got != want {
			t.Errorf("parseTimeFast(%q) = %v (%#v), ParseTime %v (%#v), %v", c, got, got, want, want, err)
		}
	}
	if fast < 16 { // 8 valid dates from 1970 on, 2 valid clocks
		t.Errorf("the fast parse took %d of %d times", fast, len(cases))
	}
}

func must(d Date, ok bool) Date {
	if !ok {
		panic("not ok")
	}
	return d
}

// TestHasSpaceOrSlash checks the word-at-a-time scan against
// strings.ContainsAny for strings of every length around the eight-byte
// steps, with a space, a slash or a byte next to them at every position.
func TestHasSpaceOrSlash(t *testing.T) {
	for n := 0; n <= 24; n++ {
		for pos := -1; pos < n; pos++ {
			for _, c := range []byte{' ', '/', '!', '.', 0x1f, '0', 0x7f, 0xa0} {
				b := []byte(strings.Repeat("a", n))
				if pos >= 0 {
					b[pos] = c
				}
				s := string(b)
				if got, want := hasSpaceOrSlash(s), strings.ContainsAny(s, " /"); got != want {
					t.Errorf("hasSpaceOrSlash(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}

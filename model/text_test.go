package model_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/model"
)

func TestEscapeText(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "abc def\tx\ny", "abc def\tx\ny"},
		{"unicode kept", "Zürich 上海 ✓", "Zürich 上海 ✓"},
		{"screen clear", "boom\x1b[2J\x1b[H", `boom\x1b[2J\x1b[H`},
		{"window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"OSC 52 clipboard", "\x1b]52;c;Y3VybCBldmlsfHNo\x07", `\x1b]52;c;Y3VybCBldmlsfHNo\x07`},
		{"carriage return", "ok\rFAILED", `ok\x0dFAILED`},
		{"backspace, DEL, NUL", "a\bb\x7fc\x00", `a\x08b\x7fc\x00`},
		{"C1 CSI", "abs\u009b2Jdaily", `abs\u009b2Jdaily`},
		{"bidi override", "evil\u202etxt.exe", `evil\u202etxt.exe`},
		{"bidi isolates", "\u2066a\u2069", `\u2066a\u2069`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
	} {
		if got := model.EscapeText(tt.in); got != tt.want {
			t.Errorf("%s: EscapeText(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// TestEscapedJSONStaysJSON: JSON output goes through the same writer; the
// escapes of C1 and bidi controls are JSON escapes of the same characters.
func TestEscapedJSONStaysJSON(t *testing.T) {
	in := map[string]string{"pipeline": "abs\u009bdaily", "error": "x\u202ey \x1b[2J", "ok": "Zürich"}
	raw, _ := json.Marshal(in)
	var got map[string]string
	if err := json.Unmarshal([]byte(model.EscapeText(string(raw))), &got); err != nil {
		t.Fatalf("escaped JSON %s: %v", model.EscapeText(string(raw)), err)
	}
	for k, v := range in {
		if got[k] != v {
			t.Errorf("%s: %q after escaping, want %q", k, got[k], v)
		}
	}
}

// TestTextWriterSplitWrites: a buffered writer above flushes at any byte,
// cutting characters in two; the output is the same as escaping it whole.
func TestTextWriterSplitWrites(t *testing.T) {
	in := []byte("Zürich \u009b上海 \u202e ok\x1b[2J\xff end é")
	want := model.EscapeText(string(in))
	for cut := 0; cut <= len(in); cut++ {
		var out bytes.Buffer
		w := model.NewTextWriter(&out)
		for _, part := range [][]byte{in[:cut], in[cut:]} {
			if n, err := w.Write(part); err != nil || n != len(part) {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("cut at %d: %q, want %q", cut, out.String(), want)
		}
	}
	// An incomplete character at the very end is escaped by Flush.
	var out bytes.Buffer
	w := model.NewTextWriter(&out)
	w.Write([]byte("a\xe4\xb8"))
	w.Flush()
	if out.String() != `a\xe4\xb8` {
		t.Errorf("trailing partial: %q", out.String())
	}
}

// TestTextWriterWritePlain: plain bytes go through WritePlain as they
// are, and after a Write that ended in a cut character, WritePlain
// completes it the way Write would.
func TestTextWriterWritePlain(t *testing.T) {
	tests := []struct {
		name        string
		first, rest string
		want        string
	}{
		{name: "plain only", rest: "{\"a\":\"b\"},\n\t", want: "{\"a\":\"b\"},\n\t"},
		{name: "after plain", first: "x", rest: "yz", want: "xyz"},
		{name: "completes a cut character", first: "a\xe4\xb8", rest: "\xad b", want: "a中 b"},
		{name: "a cut character that never ends", first: "a\xc2", rest: "b", want: `a\xc2b`},
		{name: "a cut C1 control", first: "a\xc2", rest: "\x9b b", want: `a\u009b b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := model.NewTextWriter(&out)
			if tt.first != "" {
				if _, err := w.Write([]byte(tt.first)); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := w.WritePlain([]byte(tt.rest)); err != nil || n != len(tt.rest) {
				t.Fatalf("WritePlain: %d, %v", n, err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("%q, want %q", out.String(), tt.want)
			}
		})
	}
}

// TestValidateRejectsControls: identity fields carry no control or bidi
// characters (a C1 CSI in a pipeline name used to pass).
func TestValidateRejectsControls(t *testing.T) {
	base := `{"spec":"handoff/v1","event_id":"e1","type":"artifact.transferred","time":"2026-10-01T00:00:00Z","pipeline":"abs.daily","business_date":"2026-09-30","batch_id":"20260930","system":"exchange","component":"sftp","object":"a.csv","rows":1}`
	for _, tt := range []struct{ field, from, to string }{
		{"pipeline", `"abs.daily"`, `"abs\u009bdaily"`},
		{"pipeline", `"abs.daily"`, `"abs\u202edaily"`},
		{"batch_id", `"20260930"`, `"2026\u009b0930"`},
		{"component", `"sftp"`, `"sftp\u001b[2J"`},
		{"component", `"sftp"`, `"sftp\u0085"`},
		{"object", `"a.csv"`, `"a\u202evsc.exe"`},
		{"event_id", `"e1"`, `"e1\u0007"`},
	} {
		var dec model.Decoder
		line := strings.Replace(base, tt.from, tt.to, 1)
		_, err := dec.Decode([]byte(line))
		if err == nil || !strings.HasPrefix(err.Error(), tt.field) || !strings.Contains(err.Error(), "control") {
			t.Errorf("%s: Decode(%s) = %v; want an error naming %s and the control characters", tt.field, line, err, tt.field)
		}
	}
	var dec model.Decoder
	if _, err := dec.Decode([]byte(strings.Replace(base, `"a.csv"`, `"Zürich 上海.csv"`, 1))); err != nil {
		t.Errorf("a printable non-ASCII object: %v", err)
	}
}

// TestEscapeTextEveryByteEveryPlace: the scan that passes plain text
// eight bytes at a time finds a byte to escape wherever it sits in a
// word, whatever its value, both in EscapeText and in the TextWriter's
// path for writes with nothing to escape.
func TestEscapeTextEveryByteEveryPlace(t *testing.T) {
	for b := 0; b < 256; b++ {
		want := string(rune(b))
		if plain := b >= 0x20 && b < 0x7f || b == '\n' || b == '\t'; !plain {
			want = `\x` + hex2(b)
		}
		for before := 0; before <= 17; before++ {
			in := strings.Repeat("a", before) + string([]byte{byte(b)}) + strings.Repeat("z", 9)
			exp := strings.Repeat("a", before) + want + strings.Repeat("z", 9)
			if got := model.EscapeText(in); got != exp {
				t.Fatalf("byte %#02x after %d: EscapeText = %q, want %q", b, before, got, exp)
			}
			var out bytes.Buffer
			w := model.NewTextWriter(&out)
			if _, err := w.Write([]byte(in)); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != exp {
				t.Fatalf("byte %#02x after %d: TextWriter wrote %q, want %q", b, before, out.String(), exp)
			}
		}
	}
}

func hex2(b int) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

func BenchmarkTextWriterPlain(b *testing.B) {
	line := []byte(strings.Repeat(`{"batch":"pipeline-0001/2026-01-02/b1","status":"complete","verdict":"ok"},`+"\n", 1000))
	w := model.NewTextWriter(io.Discard)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		w.Write(line)
	}
}

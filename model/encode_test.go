package model_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// TestAppendJSONString checks the escapes against literal JSON, and that
// encoding/json reads each back as the string written (invalid UTF-8 as
// U+FFFD).
func TestAppendJSONString(t *testing.T) {
	tests := []struct{ in, want, back string }{
		{"", `""`, ""},
		{"plain /path", `"plain /path"`, "plain /path"},
		{"q\"b\\", `"q\"b\\"`, "q\"b\\"},
		{"\n\r\t\x00\x01\x1f\x7f", `"\n\r\t\u0000\u0001\u001f` + "\x7f" + `"`, "\n\r\t\x00\x01\x1f\x7f"},
		{"<&>", `"<&>"`, "<&>"},
		{"é😀", `"é😀"`, "é😀"},
		{"\u2028\u2029", `"\u2028\u2029"`, "\u2028\u2029"},
		{"a\xffb\xc3", `"a\ufffdb\ufffd"`, "a\uFFFDb\uFFFD"},
	}
	for _, tt := range tests {
		got := string(model.AppendJSONString([]byte("x"), tt.in))
		if got != "x"+tt.want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", tt.in, got[1:], tt.want)
			continue
		}
		var back string
		if err := json.Unmarshal([]byte(tt.want), &back); err != nil || back != tt.back {
			t.Errorf("encoding/json reads %s as %q, %v; want %q", tt.want, back, err, tt.back)
		}
	}
}

// TestAppendJSONStringEveryByteEveryPlace: the scan that passes plain
// bytes eight at a time stops at a byte to escape wherever it sits in a
// word: every byte value, after 0 to 17 plain bytes, written as a string
// of its own would be.
func TestAppendJSONStringEveryByteEveryPlace(t *testing.T) {
	for b := 0; b < 256; b++ {
		one := string(model.AppendJSONString(nil, string([]byte{byte(b)})))
		one = one[1 : len(one)-1]
		for before := 0; before <= 17; before++ {
			in := strings.Repeat("a", before) + string([]byte{byte(b)}) + strings.Repeat("z", 9)
			want := `"` + strings.Repeat("a", before) + one + strings.Repeat("z", 9) + `"`
			if got := string(model.AppendJSONString(nil, in)); got != want {
				t.Fatalf("byte %#02x after %d: %s, want %s", b, before, got, want)
			}
		}
	}
}

// TestAppendTime checks the civil-date arithmetic against literal times,
// across leap days, century years and the ends of the stored range.
func TestAppendTime(t *testing.T) {
	for _, tt := range []struct {
		ms   int64
		want string
	}{
		{0, "1970-01-01T00:00:00.000Z"},
		{-1, "1969-12-31T23:59:59.999Z"},
		{951782400000, "2000-02-29T00:00:00.000Z"},
		{4107542400000, "2100-03-01T00:00:00.000Z"},
		{4107542399999, "2100-02-28T23:59:59.999Z"},
		{1759281605120, "2025-10-01T01:20:05.120Z"},
		{model.MaxTimeMillis, "2105-12-31T23:59:59.999Z"},
		{-62135596800000, "0001-01-01T00:00:00.000Z"},
	} {
		if got := string(model.AppendTime(nil, time.UnixMilli(tt.ms))); got != tt.want {
			t.Errorf("AppendTime(%d) = %s, want %s", tt.ms, got, tt.want)
		}
	}
}

func BenchmarkAppendJSONString(b *testing.B) {
	ss := []string{"pipe-0042.daily", "2026-01-02", "b-20260102-01", "batch.completed", "warehouse", "8c1f0e2a-6d3b-4b8e-9f7a-3c2d1e0f9a8b",
		"s3://bucket/exports/2026/01/02/part-0001.parquet", "the load stopped after the export: no warehouse.loaded event came by the deadline"}
	var buf []byte
	for b.Loop() {
		buf = buf[:0]
		for _, s := range ss {
			buf = model.AppendJSONString(buf, s)
		}
	}
}

package report

import (
	"github.com/handoff-dev/handoff/analyzer/replay"

	"strings"
	"testing"
	"time"
)

func TestWrap(t *testing.T) {
	tests := []struct {
		name        string
		first, rest string
		text        string
		width       int
		want        []string
	}{
		{"fits", "  ", "  ", "a b c", 10, []string{"  a b c"}},
		{"breaks at spaces", "- ", "  ", "one two three four", 10, []string{"- one two", "  three", "  four"}},
		{"exact width", "", "", "abcd efgh", 9, []string{"abcd efgh"}},
		{"long word stays whole", "  ", "  ", "x sha256:0123456789abcdef y", 10, []string{"  x", "  sha256:0123456789abcdef", "  y"}},
		{"empty text keeps the lead", "  - ", "    ", "", 10, []string{"  - "}},
		{"runes count as columns", "", "", "✓✓✓ ✗✗✗", 7, []string{"✓✓✓ ✗✗✗"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wrap(tt.first, tt.rest, tt.text, tt.width)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("wrap = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFmtDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0m"},
		{29 * time.Second, "0m"},
		{30 * time.Second, "1m"},
		{90 * time.Minute, "1h 30m"},
		{24 * time.Hour, "1d 0h 0m"},
		{30*time.Hour + 40*time.Minute, "1d 6h 40m"},
		{-2 * time.Hour, "-2h 0m"},
	}
	for _, tt := range tests {
		if got := replay.FormatDuration(tt.d); got != tt.want {
			t.Errorf("replay.FormatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 batches", 1: "1 batch", 2: "2 batches"} {
		if got := plural(n, "batch"); got != want {
			t.Errorf("plural(%d, batch) = %q, want %q", n, got, want)
		}
	}
	if got := plural(3, "event"); got != "3 events" {
		t.Errorf("plural(3, event) = %q", got)
	}
}

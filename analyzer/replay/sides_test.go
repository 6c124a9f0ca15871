package replay

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

func TestShortChecksum(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"sha256:f267b2adc7670060b45aef4e5658a3122715301bb5c6d3a7d65eef83753f955b", "sha256:f267b2adc767..."},
		{"sha256:9f2c5a11", "sha256:9f2c5a11"},
		{"sha256:0123456789abcdef", "sha256:0123456789abcdef"},  // 16 digits: shorter than what "..." hides
		{"sha256:0123456789abcdef0", "sha256:0123456789ab..."},  // 17: cut
		{"d41d8cd98f00b204e9800998ecf8427e", "d41d8cd98f00..."}, // no algorithm named
		{"md5:", "md5:"},
	} {
		if got := string(appendShortChecksum(nil, tt.in)); got != tt.want {
			t.Errorf("appendShortChecksum(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHasBase(t *testing.T) {
	// want is whether name is what follows the last slash of s.
	for _, c := range []struct {
		s, name string
		want    bool
	}{
		{"a.csv", "a.csv", true},
		{"in/a.csv", "a.csv", true},
		{"/in/x/a.csv", "a.csv", true},
		{"ba.csv", "a.csv", false},
		{"in/ba.csv", "a.csv", false},
		{"a.csv/", "a.csv", false},
		{"in/a.csv", "in/a.csv", false},
		{"x/in/a.csv", "in/a.csv", false},
		{"in/", "", true},
		{"in", "", false},
		{"", "", true},
		{"a", "a.csv", false},
	} {
		if got := hasBase(c.s, c.name); got != c.want {
			t.Errorf("hasBase(%q, %q) = %v, want %v", c.s, c.name, got, c.want)
		}
	}
}

func TestSideIndex(t *testing.T) {
	for i, s := range sideOrder {
		if got := sideIndex(s); got != i {
			t.Errorf("sideIndex(%q) = %d, want %d", s, got, i)
		}
	}
	// Prefixes of the constants share their bytes: the same start, a
	// shorter length, another system.
	prefixes := []model.System{model.Producer[:3], model.Consumer[:len(model.Consumer)-1], model.Exchange[:1]}
	for _, s := range append([]model.System{"", "p", "producex", "xroducer", "consumers", "e"}, prefixes...) {
		if got := sideIndex(s); got != len(sideOrder)-1 {
			t.Errorf("sideIndex(%q) = %d, want %d (unknown: the operator's)", s, got, len(sideOrder)-1)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0m"}, {29 * time.Second, "0m"}, {30 * time.Second, "1m"}, {90 * time.Minute, "1h 30m"},
		{24 * time.Hour, "1d 0h 0m"}, {30*time.Hour + 40*time.Minute, "1d 6h 40m"}, {-5 * time.Minute, "-5m"},
		{-(49*time.Hour + time.Minute), "-2d 1h 1m"},
	} {
		if got := FormatDuration(c.d); got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
		var sc scratch
		if got := sc.duration(c.d); got != c.want {
			t.Errorf("scratch.duration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

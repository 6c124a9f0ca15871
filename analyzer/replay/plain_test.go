package replay

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// plainByByte is jsonTextPlain byte by byte: the rule its word tests
// must give.
func plainByByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// TestJSONTextPlain: every byte value, at every position of strings of 0
// to 40 bytes of plain text, is found (or passed) as the byte-by-byte rule
// says, alone and next to each other byte value that could carry or
// borrow into it; and so are random strings over the bytes near the
// edges of the rule.
func TestJSONTextPlain(t *testing.T) {
	for n := 0; n <= 40; n++ {
		base := []byte(strings.Repeat("a", n))
		if n == 0 {
			if !jsonTextPlain("") {
				t.Fatal(`jsonTextPlain("") = false`)
			}
			continue
		}
		for i := 0; i < n; i++ {
			for c := 0; c < 256; c++ {
				b := append([]byte(nil), base...)
				b[i] = byte(c)
				if got, want := jsonTextPlain(string(b)), plainByByte(string(b)); got != want {
					t.Fatalf("jsonTextPlain(%q) = %v, want %v", b, got, want)
				}
				if i+1 < n {
					// The byte above: what a carry or borrow out of b[i]
					// would reach.
					for _, d := range []byte{0x00, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0xff} {
						b[i+1] = d
						if got, want := jsonTextPlain(string(b)), plainByByte(string(b)); got != want {
							t.Fatalf("jsonTextPlain(%q) = %v, want %v", b, got, want)
						}
					}
				}
			}
		}
	}
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0x81, 0xa2, 0xdc, 0xfe, 0xff, 'a', 'Z', '0'}
	r := rand.New(rand.NewPCG(7, 11))
	for range 200_000 {
		b := make([]byte, r.IntN(48))
		for i := range b {
			if r.IntN(8) == 0 {
				b[i] = edges[r.IntN(len(edges))]
			} else {
				b[i] = byte(0x20 + r.IntN(0x5f)) // printable
			}
		}
		if got, want := jsonTextPlain(string(b)), plainByByte(string(b)); got != want {
			t.Fatalf("jsonTextPlain(%q) = %v, want %v", b, got, want)
		}
	}
}

package model

import (
	"encoding/binary"
	"io"
	"unicode/utf8"
)

// Text that came from events (errors, components, objects, attrs, names)
// reaches terminals. A terminal acts on control characters: ESC starts
// sequences that clear the screen, set the window title or write the
// clipboard (OSC 52), C1 controls such as U+009B (CSI) do the same on
// some terminals, and bidirectional overrides (U+202E) reverse what
// follows. EscapeText and TextWriter, the one escaping every text output
// goes through, write them as visible escapes instead.

// needsEscape reports whether r is written as an escape: tab and newline
// are kept; other C0 controls, DEL and bytes that
// are not UTF-8 are written \xNN; C1 controls and the bidirectional
// embeddings, overrides and isolates \uNNNN (the form a JSON string
// decodes back to the same character, so JSON output stays valid).
func needsEscape(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case IsBidiControl(r):
		return true
	}
	return false
}

// IsBidiControl reports whether r is a bidirectional embedding, override
// or isolate (U+202A-U+202E, U+2066-U+2069): invisible characters that
// reorder the text after them.
func IsBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// IsControl reports whether r is a C0 or C1 control character or DEL.
func IsControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }

// AppendEscapedText appends p to dst with every control character, bidi
// control and invalid byte escaped (see needsEscape); tab and newline are
// kept.
func AppendEscapedText(dst, p []byte) []byte {
	for i := 0; i < len(p); {
		c := p[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			// The common case: a run of printable ASCII.
			n := plainPrefix(p[i:])
			dst = append(dst, p[i:i+n]...)
			i += n
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		case r < 0x80 && needsEscape(r):
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		case needsEscape(r):
			dst = append(dst, '\\', 'u', hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
		default:
			dst = append(dst, p[i:i+n]...)
		}
		i += n
	}
	return dst
}

// plainPrefix returns the length of p's longest prefix of bytes written
// as they are without a look at what follows: printable ASCII, tab and
// newline. It tests eight bytes at a time: text output is mostly such
// bytes (a backfill's JSON, gigabytes of it, wholly), and a byte at a
// time its scan was a tenth of the command's CPU.
func plainPrefix(p []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for i < len(p) {
		if i+8 <= len(p) {
			x := binary.LittleEndian.Uint64(p[i:])
			// A byte below 0x20, a DEL (0x7f) or a byte with the high
			// bit set sends the word's first byte to the test below
			// (tab and newline are below 0x20 and plain).
			below := (x - 0x20*ones) &^ x & highs
			del := x ^ 0x7f*ones
			del = (del - ones) &^ del & highs
			if below|del|x&highs == 0 {
				i += 8
				continue
			}
		}
		if c := p[i]; !(c >= 0x20 && c < 0x7f || c == '\n' || c == '\t') {
			return i
		}
		i++
	}
	return i
}

// EscapeText returns s with its control characters escaped, as
// AppendEscapedText.
func EscapeText(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f {
			return string(AppendEscapedText(make([]byte, 0, len(s)+16), []byte(s)))
		}
	}
	return s
}

// TextWriter escapes what is written through it (AppendEscapedText) and
// passes it on at once. A character cut between two writes (a buffered
// writer above flushes at any byte) is held until its end arrives; Flush
// writes what is held, escaped, at the end of the output.
type TextWriter struct {
	w    io.Writer
	hold []byte
	buf  []byte
}

// NewTextWriter returns a TextWriter writing to w.
func NewTextWriter(w io.Writer) *TextWriter { return &TextWriter{w: w} }

// Write escapes p and writes it to the underlying writer. It returns
// len(p) when the escaped form was written whole.
func (t *TextWriter) Write(p []byte) (int, error) {
	if len(t.hold) == 0 && plainPrefix(p) == len(p) {
		// Nothing to escape and no character cut: p goes on as it is,
		// without a copy.
		if _, err := t.w.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	in := p
	if len(t.hold) > 0 {
		in = append(t.hold, p...)
		t.hold = nil
	}
	// Hold back an incomplete UTF-8 sequence at the end (at most 3 bytes).
	cut := len(in)
	for k := 1; k <= 3 && k <= len(in); k++ {
		c := in[len(in)-k]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(in[len(in)-k:]) {
				cut = len(in) - k
			}
			break
		}
	}
	t.hold = append(t.hold[:0], in[cut:]...)
	t.buf = AppendEscapedText(t.buf[:0], in[:cut])
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WritePlain writes p, which the caller knows to hold only printable
// ASCII, tab and newline (bytes Write passes on as they are), without
// Write's scan: an encoder that has checked its strings as it wrote them
// (a backfill's JSON, gigabytes of it) need not have them checked again.
// Anything else in p reaches the output unescaped.
func (t *TextWriter) WritePlain(p []byte) (int, error) {
	if len(t.hold) > 0 {
		return t.Write(p) // the held character ends in p, or is invalid
	}
	if _, err := t.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete sequence, escaped: the output ends there.
func (t *TextWriter) Flush() error {
	if len(t.hold) == 0 {
		return nil
	}
	t.buf = AppendEscapedText(t.buf[:0], t.hold)
	t.hold = nil
	_, err := t.w.Write(t.buf)
	return err
}

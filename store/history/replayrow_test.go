package history

import (
	"testing"
	"unsafe"

	"github.com/handoff-dev/handoff/model"
)

// refSplit is the replay row's text cut part by part, each length
// checked against what is left: the rule split and head keep.
func refSplit(text string, lens [4]uint64) ([replayParts]string, bool) {
	var parts [replayParts]string
	rest := text
	for i := range replayParts - 1 {
		n := lens[i/2] >> 32
		if i%2 == 1 {
			n = lens[i/2] & 0xffffffff
		}
		if n > uint64(len(rest)) {
			return parts, false
		}
		parts[i], rest = rest[:n], rest[n:]
	}
	parts[replayParts-1] = rest
	return parts, true
}

// checkSplit fails where split or head answer otherwise than refSplit.
func checkSplit(t *testing.T, text string, lens [4]uint64) {
	t.Helper()
	want, wantOK := refSplit(text, lens)
	r := replayRow{text: text, lens: lens}
	var got [replayParts]string
	if ok := r.split(&got); ok != wantOK || ok && got != want {
		t.Fatalf("split(%q, %x) = %q, %v; want %q, %v", text, lens, got, ok, want, wantOK)
	}
	p, b, i, ok := r.head()
	if ok != wantOK || ok && (p != want[0] || b != want[1] || i != want[2]) {
		t.Fatalf("head(%q, %x) = %q, %q, %q, %v; want %q, %q, %q, %v", text, lens, p, b, i, ok, want[0], want[1], want[2], wantOK)
	}
}

func pair(a, b uint64) uint64 { return a<<32 | b }

// TestReplayRowSplit: a row's text cuts into its parts by the lengths
// the server sends, and lengths that do not fit are refused, whichever
// part overflows.
func TestReplayRowSplit(t *testing.T) {
	text := "p.dailyb1e1job.startedproducerc1o1sum" + "error text"
	fit := [4]uint64{pair(7, 2), pair(2, 11), pair(8, 2), pair(2, 3)}
	for _, tc := range []struct {
		name string
		text string
		lens [4]uint64
	}{
		{"fits", text, fit},
		{"empty parts", "abc", [4]uint64{pair(0, 0), pair(0, 3), 0, 0}},
		{"nothing", "", [4]uint64{}},
		{"all text in the last part", "abc", [4]uint64{}},
		{"exactly the text", "abcdefgh", [4]uint64{pair(1, 1), pair(1, 1), pair(1, 1), pair(1, 1)}},
		{"one byte short", "abcdefg", [4]uint64{pair(1, 1), pair(1, 1), pair(1, 1), pair(1, 1)}},
		{"first part too long", "abc", [4]uint64{pair(4, 0), 0, 0, 0}},
		{"second half too long", "abc", [4]uint64{pair(1, 3), 0, 0, 0}},
		{"last length too long", text, [4]uint64{fit[0], fit[1], fit[2], pair(2, 300)}},
		{"largest lengths", text, [4]uint64{pair(1<<32-1, 1<<32-1), pair(1<<32-1, 1<<32-1), pair(1<<32-1, 1<<32-1), pair(1<<32-1, 1<<32-1)}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkSplit(t, tc.text, tc.lens) })
	}
}

// FuzzReplayRowSplit: split and head cut any text by any lengths as the
// part-by-part rule does.
func FuzzReplayRowSplit(f *testing.F) {
	f.Add("p.dailyb1e1job.startedproducerc1o1sum", pair(7, 2), pair(2, 11), pair(8, 2), pair(2, 3))
	f.Add("abc", pair(4, 0), uint64(0), uint64(0), uint64(0))
	f.Add("abcdefgh", pair(1, 1), pair(1, 1), pair(1, 1), pair(1, 1))
	f.Fuzz(func(t *testing.T, text string, a, b, c, d uint64) {
		// Lengths as the server sends them: two 32-bit halves.
		checkSplit(t, text, [4]uint64{a, b, c, d})
	})
}

// TestSystemConstants: a v1 system's name becomes its constant, any
// other text stays as it is.
func TestSystemConstants(t *testing.T) {
	for _, k := range []model.System{model.Producer, model.Exchange, model.Consumer, model.Operator} {
		text := string([]byte(k)) // not the constant's bytes
		if got := system(text); got != k || unsafe.StringData(string(got)) != unsafe.StringData(string(k)) {
			t.Fatalf("system(%q) = %q, not the constant", text, got)
		}
	}
	for _, s := range []string{"", "p", "producers", "Producer", "orchestrator", "exchanger", "consume", "x"} {
		if got := system(s); string(got) != s {
			t.Fatalf("system(%q) = %q, want the text itself", s, got)
		}
	}
}

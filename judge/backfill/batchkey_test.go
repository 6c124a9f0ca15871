package backfill

import (
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/model"
)

// checkKeys parses names in turn with one keyParser and fails where it
// answers otherwise than model.ParseBatchKey.
func checkKeys(t *testing.T, names []string) {
	t.Helper()
	var p keyParser
	for i, s := range names {
		got, ok := p.parse(s)
		want, err := model.ParseBatchKey(s)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("name %d %q: parse gives %+v, %v; ParseBatchKey %+v, %v", i, s, got, ok, want, err)
		}
	}
}

// TestKeyParserAsParseBatchKey: whatever came before, the remembered
// pipeline and date give the answer of a full parse.
func TestKeyParserAsParseBatchKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
	}{
		{"one date", []string{"p.daily/2026-01-02/20260102", "p.daily/2026-01-02/20260102-r1", "p.daily/2026-01-02/x"}},
		{"next date and pipeline", []string{"p/2026-01-02/a", "p/2026-01-03/a", "q/2026-01-03/a", "p/2026-01-03/b"}},
		{"bad batch id after a good name", []string{"p/2026-01-02/a", "p/2026-01-02/", "p/2026-01-02/a/b", "p/2026-01-02/a b", "p/2026-01-02/a\x7f", "p/2026-01-02/\xff"}},
		{"bad names never remembered", []string{"p q/2026-01-02/a", "p q/2026-01-02/b", "p/2026-13-02/a", "p/2026-13-02/b", "p/2026-01-02/a"}},
		{"prefix of another pipeline", []string{"p/2026-01-02/a", "p/2026-01-02/a/2026-01-02/b", "pp/2026-01-02/a"}},
		{"long id", []string{"p/2026-01-02/a", "p/2026-01-02/" + strings.Repeat("b", 300)}},
		{"empty", []string{"", "p/2026-01-02/a", "", "//", "p/2026-01-02", "p/2026-01-02/", "p/", "p//a"}},
		{"storable dates", []string{"p/2026-01-02/a", "p/1970-01-01/a", "p/1970-01-02/a", "p/2105-12-31/a", "p/2106-01-01/a", "p/2026-02-29/a", "p/2028-02-29/a"}},
		{"date layout", []string{"p/2026-01-02/a", "p/2026-1-02/a", "p/2026-01-2/a", "p/2026/01/02/a", "p/2026-01-02a/b", "p/+026-01-02/a", "p/2026-01-0x/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkKeys(t, tc.names) })
	}
}

// FuzzKeyParser: a batch name after another (both cut from one input at
// a NUL) gets the answer of model.ParseBatchKey.
func FuzzKeyParser(f *testing.F) {
	f.Add("p/2026-01-02/a\x00p/2026-01-02/b")
	f.Add("p/2026-01-02/a\x00p/2026-01-02/a/b")
	f.Add("p/2026-01-02/a\x00p/2026-01-03/a")
	f.Add("p/0000-01-02/a\x00p/0000-01-02/b")
	f.Add("p/2026-01-02/a\x00p/1970-01-01/a\x00p/2105-12-31/b\x00p/2106-01-01/c")
	f.Fuzz(func(t *testing.T, in string) {
		checkKeys(t, strings.Split(in, "\x00"))
	})
}

package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
)

// TestAddViewMatchesAdd: the ingest path (DecodeView + AddView) writes the
// same columns as Decode + Add for the same messages, including after
// Reset, when the batch reuses its string buffers, and for strings larger
// than an arena chunk.
func TestAddViewMatchesAdd(t *testing.T) {
	events := testenv.Events(3000, "pipe.view", 7)
	big := events[0]
	big.ID = "big"
	big.Error = strings.Repeat("x", arenaChunk+10)
	big.Attrs = map[string]string{"b": "2", "a": strings.Repeat("y", 1000)}
	events = append(events, big)
	msgs := make([][]byte, len(events))
	for i := range events {
		msgs[i] = events[i].AppendJSON(nil)
	}
	src := Source{Topic: "t", Partition: 2, Offset: 40}

	var want, got EventBatch
	var dec, vdec model.Decoder
	fill := func(from, to int) {
		want.Reset()
		got.Reset()
		for i, m := range msgs[from:to] {
			e, err := dec.Decode(m)
			if err != nil {
				t.Fatalf("Decode %s: %v", m, err)
			}
			want.Add(&e, src, int64(i))
			v, err := vdec.DecodeView(m)
			if err != nil {
				t.Fatalf("DecodeView %s: %v", m, err)
			}
			got.AddView(v, src, int64(i))
		}
	}
	for _, r := range [][2]int{{0, 2000}, {2000, len(msgs)}, {1000, 1500}} {
		fill(r[0], r[1])
		if got.Len() != r[1]-r[0] {
			t.Fatalf("AddView batch has %d rows, want %d", got.Len(), r[1]-r[0])
		}
		if gc, wc := got.Columns(), want.Columns(); !reflect.DeepEqual(gc, wc) {
			for i := range gc {
				if !reflect.DeepEqual(gc[i], wc[i]) {
					t.Fatalf("rows %d..%d: column %d (%s) differs", r[0], r[1], i, SplitColumns(EventColumns)[i])
				}
			}
		}
	}
}

func TestArena(t *testing.T) {
	var a arena
	var kept []string
	var want []string
	for i := 0; i < 3*arenaChunk/100; i++ {
		s := strings.Repeat(string(rune('a'+i%26)), 100)
		kept = append(kept, a.copy(s))
		want = append(want, s)
	}
	if a.n < 3 {
		t.Fatalf("%d chunks in use, want at least 3", a.n)
	}
	for i := range kept {
		if kept[i] != want[i] {
			t.Fatalf("string %d changed while the arena grew", i)
		}
	}
	n := len(a.chunks)
	a.reset()
	if s := a.copy("abc"); s != "abc" || a.n != 1 || len(a.chunks) != n {
		t.Fatalf("after reset: %q, %d chunks in use of %d (had %d)", s, a.n, len(a.chunks), n)
	}
	if a.copy("") != "" {
		t.Fatal("empty string")
	}
}

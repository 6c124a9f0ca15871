package schema

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

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
	big.Error = strings.Repeat("x", 300<<10)
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
		// Block by block, as the sink sends them, and whole.
		var buf ColumnBuffers
		for lo := r[0]; lo < r[1]; lo += 700 {
			n := r[1] - r[0]
			a, z := lo-r[0], min(lo-r[0]+700, n)
			if gc, wc := got.AppendColumns(&buf, a, z), want.AppendColumns(new(ColumnBuffers), a, z); !reflect.DeepEqual(gc, wc) {
				t.Fatalf("rows %d..%d of %d..%d differ", a, z, r[0], r[1])
			}
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

// TestColumnsOfBatch: the columns hold the events as added (checked
// against the events themselves, not against another EventBatch), with
// row ranges cut anywhere.
func TestColumnsOfBatch(t *testing.T) {
	events := testenv.Events(300, "pipe.cols", 3)
	var b EventBatch
	for i := range events {
		b.Add(&events[i], Source{Topic: "topic-" + strconv.Itoa(i%2), Partition: int32(i % 3), Offset: int64(i)}, int64(1000+i))
	}
	var buf ColumnBuffers
	for _, r := range [][2]int{{0, 300}, {0, 1}, {17, 18}, {5, 250}, {299, 300}, {120, 120}} {
		cols := b.AppendColumns(&buf, r[0], r[1])
		for k, c := range cols {
			if n := reflect.ValueOf(c).Len(); n != r[1]-r[0] {
				t.Fatalf("rows %v: column %d has %d rows", r, k, n)
			}
		}
		for i := r[0]; i < r[1]; i++ {
			e, j := &events[i], i-r[0]
			keys := cols[18].([][]string)[j]
			if cols[0].([]string)[j] != e.Pipeline || cols[3].([]string)[j] != e.ID || cols[5].([]string)[j] != string(e.Type) ||
				cols[7].([]string)[j] != string(e.System) || cols[9].([]string)[j] != e.Object || cols[17].([]string)[j] != e.Error ||
				!cols[1].([]time.Time)[j].Equal(DateColumn(e.BusinessDate)) || cols[6].([]int64)[j] != e.TimeMillis() ||
				cols[21].([]string)[j] != "topic-"+strconv.Itoa(i%2) || cols[23].([]int64)[j] != int64(i) || len(keys) != len(e.Attrs) {
				t.Fatalf("rows %v: row %d differs from its event %+v", r, i, *e)
			}
			for x, k := range keys {
				if e.Attrs[k] != cols[19].([][]string)[j][x] || (x > 0 && keys[x-1] >= k) {
					t.Fatalf("row %d: attrs %q %q, event %v", i, keys, cols[19].([][]string)[j], e.Attrs)
				}
			}
		}
	}
}

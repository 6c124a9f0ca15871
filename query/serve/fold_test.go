package serve

import (
	"strconv"
	"testing"

	"github.com/handoff-dev/handoff/model"
)

// TestFoldBehind: every event added is folded, once, in the order added,
// by the time wait returns, for counts around the block size.
func TestFoldBehind(t *testing.T) {
	for _, n := range []int{0, 1, foldBlock - 1, foldBlock, foldBlock + 1, 5*foldBlock + 7} {
		var got []string
		f := newFoldBehind(func(e *model.Event) { got = append(got, e.ID) })
		for i := range n {
			e := model.Event{ID: strconv.Itoa(i)}
			f.add(&e)
			e.ID = "changed after add" // add keeps a copy
		}
		f.wait()
		if len(got) != n {
			t.Fatalf("%d events added: %d folded", n, len(got))
		}
		for i, id := range got {
			if id != strconv.Itoa(i) {
				t.Fatalf("%d events added: event %d folded as %q", n, i, id)
			}
		}
	}
}

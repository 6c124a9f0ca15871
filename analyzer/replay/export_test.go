package replay_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// TestEachFoldsBackTheSame: the events Each gives, stepped into a new
// State of the same key, give the diagnosis of the state they came from,
// with redeliveries and conflicting duplicates folded in, and Each gives
// each distinct event once.
func TestEachFoldsBackTheSame(t *testing.T) {
	c := seedContract()
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 29))
		date := model.Date{Year: 2026, Month: 10, Day: 1 + int(seed%28)}
		events := conflictingBatch(r, date, func(e *model.Event) { e.System = model.System("elsewhere") })
		var s replay.State
		for i := range events {
			s.Step(&events[i])
		}
		again := replay.NewState(s.Key())
		n := 0
		s.Each(func(e *model.Event) {
			n++
			if !again.Step(e) {
				t.Fatalf("seed %d: event %s of Each not folded back", seed, e.ID)
			}
		})
		if n != s.Len() || again.Len() != s.Len() {
			t.Fatalf("seed %d: Each gave %d events, %d folded back, want %d", seed, n, again.Len(), s.Len())
		}
		asOf := date.In(time.UTC).Add(40 * time.Hour)
		want, got := s.Evaluate(c, asOf, replay.Context{}), again.Evaluate(c, asOf, replay.Context{})
		if a, b := want.AppendJSON(nil), got.AppendJSON(nil); !bytes.Equal(a, b) {
			t.Fatalf("seed %d: folded back from Each, the diagnosis changed:\nwant %s\n got %s", seed, a, b)
		}
	}
}

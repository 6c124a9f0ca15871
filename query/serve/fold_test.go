package serve

import (
	"fmt"
	"testing"

	"github.com/handoff-dev/handoff/model"
)

// TestFoldShards: every event added is folded, once, by the time wait
// returns, in the shard of its pipeline, each shard's in the order
// added, for counts around the block size and for one shard or several.
func TestFoldShards(t *testing.T) {
	for _, shards := range []int{1, 2, 3} {
		for _, n := range []int{0, 1, foldBlock - 1, foldBlock, foldBlock + 1, 5*foldBlock + 7} {
			got := make([][]string, shards)
			f := newFoldShards(shards, func(i int, e *model.Event) {
				if s := shardOf(e.Pipeline, shards); s != i {
					t.Errorf("%d shards: event %s of %s folded in shard %d, not %d", shards, e.ID, e.Pipeline, i, s)
				}
				got[i] = append(got[i], e.ID)
			})
			want := make([][]string, shards)
			for i := range n {
				// runs of a pipeline, as rows come
				e := model.Event{ID: fmt.Sprint(i), Pipeline: fmt.Sprintf("p%d", i/3%17)}
				s := shardOf(e.Pipeline, shards)
				want[s] = append(want[s], e.ID)
				f.add(&e)
				e.ID = "changed after add" // add keeps a copy
			}
			f.wait()
			folded := 0
			for i := range got {
				folded += len(got[i])
				if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
					t.Fatalf("%d shards, %d events: shard %d folded %v, want %v", shards, n, i, got[i], want[i])
				}
			}
			if folded != n {
				t.Fatalf("%d shards, %d events added: %d folded", shards, n, folded)
			}
		}
	}
}

// TestShardOf: every shard gets pipelines, and a pipeline's shard is
// the same every time.
func TestShardOf(t *testing.T) {
	for _, n := range []int{1, 2, 3, maxShards} {
		count := make([]int, n)
		for i := range 1000 {
			p := fmt.Sprintf("bench.p%04d.daily", i)
			s := shardOf(p, n)
			if s != shardOf(p, n) || s < 0 || s >= n {
				t.Fatalf("shardOf(%q, %d) = %d", p, n, s)
			}
			count[s]++
		}
		for i, c := range count {
			if c < 1000/n/2 {
				t.Errorf("%d shards: shard %d has %d of 1,000 pipelines", n, i, c)
			}
		}
	}
}

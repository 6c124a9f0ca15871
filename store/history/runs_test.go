package history

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortRuns: whatever the runs (none, one, a few, many, reversed),
// sortRuns sorts as a stable sort does: equal values keep their order.
func TestSortRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	runs := func(n, k int) []int {
		var v []int
		for range k {
			start := r.IntN(1000)
			for j := range n / k {
				v = append(v, start+j/3) // equal neighbours
			}
		}
		return v
	}
	for _, tt := range []struct {
		name string
		vals []int
	}{
		{"empty", nil},
		{"one", []int{7}},
		{"sorted", runs(1000, 1)},
		{"two runs", runs(1000, 2)},
		{"seven runs", runs(7000, 7)},
		{"many short runs", runs(3000, 1000)},
		{"reversed", func() []int { v := runs(500, 1); slices.Reverse(v); return v }()},
		{"random", func() []int {
			v := make([]int, 2000)
			for i := range v {
				v[i] = r.IntN(50)
			}
			return v
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			order := make([]int32, len(tt.vals))
			for i := range order {
				order[i] = int32(i)
			}
			want := slices.Clone(order)
			by := func(a, b int32) int { return cmp.Compare(tt.vals[a], tt.vals[b]) }
			slices.SortStableFunc(want, by)
			sortRuns(order, by)
			if !slices.Equal(order, want) {
				t.Errorf("sortRuns = %v..., want %v...", order[:min(10, len(order))], want[:min(10, len(want))])
			}
		})
	}
}

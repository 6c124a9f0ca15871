package history

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/handoff-dev/handoff/model"
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

// TestBucketSort: the counting sort of rowBlocks orders rows as a stable
// sort by pipeline rank, date, batch id and event id does (copies, equal
// in all four, keep the order read), over several units reusing the same
// blocks; keys spanning too many dates for the rows are left to the
// general sort, which gives the same order.
func TestBucketSort(t *testing.T) {
	type row struct{ batch, id string }
	r := rand.New(rand.NewPCG(3, 4))
	rb := &rowBlocks[row]{}
	for _, tt := range []struct {
		name   string
		n      int
		days   int
		bucket bool // bucketSort takes it
	}{
		{"unit", 20000, 60, true},
		{"one row", 1, 1, true},
		{"small buckets", 5000, 365, true},
		{"decades", 300, 40 * 365, false},
		{"unit again", 9000, 30, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := model.MustParseDate("2020-01-01")
			for range tt.n {
				d := base.AddDays(r.IntN(tt.days))
				row := row{batch: fmt.Sprintf("b%02d", r.IntN(4)), id: fmt.Sprintf("e%03d", r.IntN(40))}
				rb.add(&row, uint64(r.IntN(7)), d)
			}
			by := func(a, b int32) int {
				if c := cmp.Compare(rb.keys[a], rb.keys[b]); c != 0 {
					return c
				}
				x, y := rb.at(a), rb.at(b)
				if c := cmp.Compare(x.batch, y.batch); c != 0 {
					return c
				}
				return cmp.Compare(x.id, y.id)
			}
			want := make([]int32, rb.n)
			for i := range want {
				want[i] = int32(i)
			}
			slices.SortStableFunc(want, by)
			order := make([]int32, rb.n)
			if got := rb.bucketSort(order, func(x *row) (string, string) { return x.batch, x.id }); got != tt.bucket {
				t.Fatalf("bucketSort took it: %v, want %v", got, tt.bucket)
			}
			got := rb.sort(func(x *row) (string, string) { return x.batch, x.id })
			if !slices.Equal(got, want) {
				t.Fatalf("sort = %v..., want %v...", got[:min(10, len(got))], want[:min(10, len(want))])
			}
			recycle(&sync.Pool{}, rb)
		})
	}
}

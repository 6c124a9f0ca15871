package history

import "slices"

// sortRuns sorts order by cmp, stably. It is made for input that is a
// few sorted runs back to back, as a read without ORDER BY returns rows:
// each of the server's reading threads streams a range of a part in the
// table's sort order, and their blocks interleave. It finds the runs and
// merges them pairwise, a linear pass for each doubling of the run
// length, where a general sort compares rows far apart some twenty times
// each (a sort of the index by pdqsort was 6% of a backfill's CPU). With
// many short runs it falls back to slices.SortStableFunc.
func sortRuns(order []int32, cmp func(a, b int32) int) {
	n := len(order)
	if n < 2 {
		return
	}
	starts := []int{0}
	for i := 1; i < n; i++ {
		if cmp(order[i-1], order[i]) > 0 {
			starts = append(starts, i)
		}
	}
	if len(starts) == 1 {
		return
	}
	if len(starts) > n/8 {
		slices.SortStableFunc(order, cmp)
		return
	}
	src, dst := order, make([]int32, n)
	next := make([]int, 0, len(starts)/2+1)
	for len(starts) > 1 {
		next = next[:0]
		for k := 0; k < len(starts); k += 2 {
			lo := starts[k]
			if k+1 == len(starts) {
				copy(dst[lo:], src[lo:])
				next = append(next, lo)
				break
			}
			mid, hi := starts[k+1], n
			if k+2 < len(starts) {
				hi = starts[k+2]
			}
			merge(dst[lo:hi], src[lo:mid], src[mid:hi], cmp)
			next = append(next, lo)
		}
		starts, next = next, starts
		src, dst = dst, src
	}
	if &src[0] != &order[0] {
		copy(order, src)
	}
}

// merge merges the sorted a and b into out (len(a) + len(b) long),
// taking from a first among equals.
func merge(out, a, b []int32, cmp func(a, b int32) int) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if cmp(a[i], b[j]) <= 0 {
			out[k] = a[i]
			i++
		} else {
			out[k] = b[j]
			j++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
}

package detect

import "time"

// timers is a min-heap of open batches by their next deadline (Unix ms).
// Each batch is in it at most once; batch.slot is its position, -1 when
// not armed. A heap rather than a wheel: deadlines spread over days, a
// batch holds one timer, and a million timers cost 8 MiB of pointers.
type timers []*batch

func (h timers) less(i, j int) bool { return h[i].due < h[j].due }

func (h timers) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].slot, h[j].slot = int32(i), int32(j)
}

func (h timers) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h timers) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// arm sets b's timer to due (Unix ms), or disarms it when due is 0.
func (h *timers) arm(b *batch, due int64) {
	if due == 0 {
		h.disarm(b)
		return
	}
	b.due = due
	if b.slot < 0 {
		b.slot = int32(len(*h))
		*h = append(*h, b)
		h.up(int(b.slot))
		return
	}
	h.up(int(b.slot))
	h.down(int(b.slot))
}

func (h *timers) disarm(b *batch) {
	i := int(b.slot)
	if i < 0 {
		return
	}
	last := len(*h) - 1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	if i != last {
		h.up(i)
		h.down(i)
	}
	b.slot, b.due = -1, 0
}

// pop removes and returns the batch with the earliest timer if it is due
// at or before ms.
func (h *timers) pop(ms int64) *batch {
	if len(*h) == 0 || (*h)[0].due > ms {
		return nil
	}
	b := (*h)[0]
	h.disarm(b)
	return b
}

// wakes holds the instants (Unix ms) at which a deadline or an allowed
// lateness falls due, each once however many batches share it: what
// NextDue reports. The timer heap cannot tell it, since most of its timers
// at any moment are of events folded a little ahead of the safe time,
// which the next regular Advance handles. An instant stays after its batch
// is disarmed; that costs at most an Advance with nothing to fire.
type wakes struct {
	h   []int64
	set map[int64]struct{}
}

func (w *wakes) add(ms int64) {
	if ms == 0 {
		return
	}
	if _, ok := w.set[ms]; ok {
		return
	}
	if w.set == nil {
		w.set = make(map[int64]struct{})
	}
	w.set[ms] = struct{}{}
	w.h = append(w.h, ms)
	for i := len(w.h) - 1; i > 0; {
		p := (i - 1) / 2
		if w.h[p] <= w.h[i] {
			break
		}
		w.h[p], w.h[i] = w.h[i], w.h[p]
		i = p
	}
}

// drop forgets the instants at or before ms.
func (w *wakes) drop(ms int64) {
	for len(w.h) > 0 && w.h[0] <= ms {
		delete(w.set, w.h[0])
		last := len(w.h) - 1
		w.h[0] = w.h[last]
		w.h = w.h[:last]
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(w.h) && w.h[l] < w.h[m] {
				m = l
			}
			if r := l + 1; r < len(w.h) && w.h[r] < w.h[m] {
				m = r
			}
			if m == i {
				break
			}
			w.h[i], w.h[m] = w.h[m], w.h[i]
			i = m
		}
	}
}

// NextDue returns the earliest time after the last Advance's safe time at
// which a deadline or an allowed lateness of an open batch falls due (the
// zero time when none does): an Advance with a safe time at or after it
// raises or resolves something. The wiring reads the evidence's safe time
// right then rather than waiting for its next regular Advance.
func (d *Detector) NextDue() time.Time {
	if len(d.wakes.h) == 0 {
		return time.Time{}
	}
	return timeOf(d.wakes.h[0])
}

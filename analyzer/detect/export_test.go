package detect

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// ParseFindingJSON is ParseFinding reading every record with
// encoding/json: the reference its fast path is held to.
func ParseFindingJSON(data []byte) (Finding, error) {
	f, _, err := parseFinding(data, false)
	return f, err
}

// ForgetRun makes d forget the batch of the last event it observed and
// the touch that still stands (Detector.last, Detector.touched): called
// before every Observe, d folds each event as if it were the first of its
// batch's run, the reference TestRunsFoldAsEventByEvent holds the runs to.
func (d *Detector) ForgetRun() { d.last, d.touched = nil, nil }

// Dump writes out what d holds, in an order that does not depend on its
// maps: every open batch (key, flags, due time, findings' records and
// the events its state folded, in their order), the batches marked for
// evaluation, the closed batches, the attempts index, each pipeline's
// first date, the events folded ahead of the safe time, the suspended
// batches, the heartbeats kept and the safe time and floor.
func (d *Detector) Dump() string {
	var w strings.Builder
	var open []*batch
	for b := range d.open.all() {
		open = append(open, b)
	}
	slices.SortFunc(open, func(a, b *batch) int { return a.key().Compare(b.key()) })
	for _, b := range open {
		fmt.Fprintf(&w, "open %s dirty=%v expected=%v suspended=%v delivered=%v due=%d armed=%v frozen=%v\n",
			b.key(), b.dirty, b.expected, b.suspended, b.delivered, b.due, b.slot >= 0, b.live == nil)
		for _, t := range b.findings() {
			fmt.Fprintf(&w, "  finding %+v\n", t)
		}
		d.thaw(b).Each(func(e *model.Event) { fmt.Fprintf(&w, "  event %+v\n", *e) })
		for _, k := range d.reruns.Of(b.key()) {
			fmt.Fprintf(&w, "  attempt %s\n", k)
		}
	}
	var dirty []string
	for _, b := range d.dirty {
		dirty = append(dirty, fmt.Sprintf("%s gone=%v", b.key(), b.slot == slotGone))
	}
	slices.Sort(dirty)
	fmt.Fprintf(&w, "dirty %d %v\n", len(d.dirty), dirty)
	closed := slices.SortedFunc(maps.Keys(d.closed), model.BatchKey.Compare)
	for _, k := range closed {
		fmt.Fprintf(&w, "closed %s %v %v\n", k, d.closed[k].ids, d.closed[k].done)
	}
	for _, p := range slices.Sorted(maps.Keys(d.first)) {
		fmt.Fprintf(&w, "first %s %s\n", p, d.first[p])
	}
	for _, x := range d.early {
		if x.heartbeat != nil {
			fmt.Fprintf(&w, "early %d heartbeat %s\n", x.ms, x.heartbeat.ID)
		} else {
			fmt.Fprintf(&w, "early %d %s\n", x.ms, x.b.key())
		}
	}
	for _, k := range d.Suspended() {
		fmt.Fprintf(&w, "suspended %s\n", k)
	}
	for _, p := range slices.Sorted(maps.Keys(d.first)) {
		fmt.Fprintf(&w, "alive %s %+v\n", p, d.procs.Alive(p, func(replay.Heartbeat) bool { return true }))
	}
	fmt.Fprintf(&w, "safe %s floor %s horizon %s armed %d\n", d.safe, d.floor, d.horizon, len(d.timers))
	return w.String()
}

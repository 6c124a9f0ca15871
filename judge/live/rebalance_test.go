package live_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
)

// phases cuts the lines of a generated file by event time: lines with a
// time at or before cuts[0], then up to cuts[1], ..., then the rest. Lines
// that are not valid events go to the first phase.
func phases(t *testing.T, path string, cuts ...time.Time) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]string, len(cuts)+1)
	var dec model.Decoder
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if len(l) == 0 {
			continue
		}
		i := 0
		if e, err := dec.Decode(l); err == nil {
			for i < len(cuts) && e.Time.After(cuts[i]) {
				i++
			}
		}
		out[i] = append(out[i], string(l))
	}
	return out
}

// publishAny publishes lines keyed by batch (unkeyed when not an event).
func (e *env) publishAny(t *testing.T, lines []string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "phase-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	e.publishFile(t, f.Name(), 0)
}

// settled waits until the detectors' group has committed every event of
// the topic: every event is folded and the findings of each were
// published before the commit.
func (e *env) settled(t *testing.T, what string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, what, func() (bool, string) {
		n := testenv.Uncommitted(t, e.brokers, e.cfg.Group, e.cfg.Kafka.Topic)
		return n == 0, fmt.Sprintf("%d events not committed by the detectors", n)
	})
}

// clock is a test's clock, moved by the test.
type clock struct{ ms atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.advance(t)
	return c
}

func (c *clock) advance(t time.Time) { c.ms.Store(t.UnixMilli()) }
func (c *clock) now() time.Time      { return time.UnixMilli(c.ms.Load()).UTC() }

// published reads every finding record on the findings topic, fails on a
// (fingerprint, seq) published twice, and returns one line per record,
// sorted: the whole record but its diagnosis (an instance that owns a
// batch's partition but not the previous batch's sees another continuity
// context in the diagnosis; no finding depends on it, docs/detect.md).
func (e *env) published(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for _, m := range testenv.ReadAll(t, e.brokers, e.cfg.FindingsTopic) {
		f, err := detect.ParseFinding(m.Value)
		if err != nil {
			t.Fatalf("findings topic: %v: %s", err, m.Value)
		}
		id := fmt.Sprintf("%s#%d", f.Fingerprint, f.Seq)
		if seen[id] {
			t.Errorf("finding %s (%s %s %s) published twice", id, f.Batch, f.Kind, f.Name)
		}
		seen[id] = true
		f.Diagnosis = replay.Diagnosis{}
		out = append(out, string(f.AppendJSON(nil)))
	}
	sort.Strings(out)
	return out
}

// TestTwoInstancesRebalance runs two handoff detect instances in one group
// on a topic of four partitions: the second joins mid-way, later it is
// killed and the first takes its partitions over. Together they publish
// exactly the finding records one instance publishes on the same events
// at the same times: none twice, none missing.
//
// The clock is the test's: each phase's events (cut by event time) are
// published and folded while the clock stands at the previous cut, then
// the clock moves to the phase's cut, so every batch is judged once per
// phase with all its events, whichever instance owns it.
func TestTwoInstancesRebalance(t *testing.T) {
	testenv.Integration(t)
	end := time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC)
	o := gen.Options{Seed: 11, End: end, Days: 12, Pipelines: 6, Bad: 0.002,
		Schedules: []gen.Schedule{gen.Hourly, gen.Daily, gen.Weekdays}, NeverProduced: 0.03, AllKinds: true}
	path, contracts, res := genHistory(t, o)
	t1, t2, t3 := end.AddDate(0, 0, -6), end.AddDate(0, 0, -2), end.AddDate(0, 0, 2)
	parts := phases(t, path, t1, t2)
	t.Logf("%d batches; phases of %d, %d, %d lines", res.Batches, len(parts[0]), len(parts[1]), len(parts[2]))

	setup := func() (*env, *clock) {
		e := newEnvParts(t, 4)
		e.contracts = contracts
		e.cfg.ExpectFrom = res.First.Format(time.DateOnly)
		e.cfg.Heartbeat = 0
		e.cfg.SessionTimeout = 6 * time.Second
		return e, newClock(t1)
	}
	// at moves the clock to ts and waits until every instance has judged
	// its batches as of then.
	at := func(c *clock, ts time.Time, ds ...*detector) {
		c.advance(ts)
		for _, d := range ds {
			d.caughtUp(t, ts)
		}
	}

	// The reference: one instance throughout.
	ref, rc := setup()
	ref.publishAny(t, parts[0])
	a := ref.startDetectorClock(t, rc.now)
	ref.settled(t, "reference: phase 1 folded")
	a.caughtUp(t, t1)
	ref.publishAny(t, parts[1])
	ref.settled(t, "reference: phase 2 folded")
	at(rc, t2, a)
	ref.publishAny(t, parts[2])
	ref.settled(t, "reference: phase 3 folded")
	at(rc, t3, a)
	want := ref.published(t)
	a.stop()

	// Two instances: B joins after phase 1, is killed after phase 2.
	e, c := setup()
	e.publishAny(t, parts[0])
	a = e.startDetectorClock(t, c.now)
	e.settled(t, "phase 1 folded")
	a.caughtUp(t, t1)
	b := e.startDetectorClock(t, c.now)
	// B is in the group once it has advanced with its evidence at the clock;
	// A has then rejoined too (the group assigns both in one generation).
	b.caughtUp(t, t1)
	e.publishAny(t, parts[1])
	e.settled(t, "phase 2 folded by both")
	at(c, t2, a, b)
	// Each reports the lag of its own partitions only: A read all four
	// before B joined, and a gauge A kept for B's would show B's backlog
	// twice (and never go down).
	la, lb := a.lagPartitions(t), b.lagPartitions(t)
	if len(la) == 0 || len(lb) == 0 || len(la)+len(lb) > 4 || len(slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(la), lb...))))) != len(la)+len(lb) {
		t.Fatalf("consumer lag reported for partitions %v by A and %v by B: want each its own, disjoint", la, lb)
	}
	b.stop()
	e.publishAny(t, parts[2])
	e.settled(t, "phase 3 folded: A took B's partitions over")
	at(c, t3, a)
	got := e.published(t)

	if len(want) == 0 {
		t.Fatal("the reference published nothing: the comparison proves nothing")
	}
	if d := diffLines(got, want); d != "" {
		t.Fatalf("two instances published %d records, one instance %d:\n%s", len(got), len(want), d)
	}
	_, _, pa := a.r.Progress()
	_, _, pb := b.r.Progress()
	if pb == 0 || pa+pb != int64(len(got)) {
		t.Fatalf("A published %d records and B %d, the topic holds %d: want both to have worked, and nothing else on the topic", pa, pb, len(got))
	}
	t.Logf("%d finding records (A %d, B %d), the same as one instance's", len(want), pa, pb)
}

// diffLines lists the lines only in got and only in want (sorted inputs).
func diffLines(got, want []string) string {
	var b bytes.Buffer
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j >= len(want) || (i < len(got) && got[i] < want[j]):
			fmt.Fprintf(&b, "+ %s\n", got[i])
			i++
		case i >= len(got) || want[j] < got[i]:
			fmt.Fprintf(&b, "- %s\n", want[j])
			j++
		default:
			i++
			j++
		}
	}
	return b.String()
}

package detect_test

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// TestRestartPublishesNothingTwiceMissesNothing kills the detector at
// several points of a generated history and starts a new one from the
// stored history and the published findings: what the two publish
// together equals, record for record, what one detector that never
// stopped publishes.
func TestRestartPublishesNothingTwiceMissesNothing(t *testing.T) {
	contracts := seedContracts(t)
	const days = 10
	ts := steps(days)
	for seed := uint64(1); seed <= 3; seed++ {
		events := genHistory(rand.New(rand.NewPCG(seed, 7)), days)
		ref := newPlayer(mustNew(t, detect.Config{Contracts: contracts, From: genFrom}), events, nil)
		for _, safe := range ts {
			ref.step(safe)
		}
		want := findingsJSON(ref.findings)
		for _, cut := range []int{len(ts) / 4, len(ts) / 2, 3 * len(ts) / 4} {
			t.Run(fmt.Sprintf("seed %d cut %d", seed, cut), func(t *testing.T) {
				a := newPlayer(mustNew(t, detect.Config{Contracts: contracts, From: genFrom}), events, nil)
				for _, safe := range ts[:cut] {
					a.step(safe)
				}
				b := a.restart(t, detect.Config{Contracts: contracts, From: genFrom})
				for _, safe := range ts[cut:] {
					b.step(safe)
				}
				got := findingsJSON(append(slices.Clone(a.findings), b.findings...))
				if !bytes.Equal(got, want) {
					t.Fatalf("before + after the restart differ from one run (%d+%d records, want %d):\n%s",
						len(a.findings), len(b.findings), len(ref.findings), firstDiff(got, want))
				}
			})
		}
	}
}

// TestDeadlinePassedWhileDownFiresOnce: the seed's stalled batch is due at
// 22:00Z. A detector that stopped at 21:00 and starts again at 03:00
// publishes the finding at its first advance, once; one that stopped after
// publishing it publishes nothing on start.
func TestDeadlinePassedWhileDownFiresOnce(t *testing.T) {
	contracts := seedContracts(t)
	for _, stop := range []string{"2026-09-30T21:00:00Z", "2026-09-30T22:30:00Z"} {
		a := newPlayer(mustNew(t, detect.Config{Contracts: contracts, From: model.MustParseDate("2026-09-29")}), seedEvents(t), nil)
		for s := at("2026-09-29T00:00:00Z"); !s.After(at(stop)); s = s.Add(30 * time.Minute) {
			a.step(s)
		}
		b := a.restart(t, detect.Config{Contracts: contracts, From: model.MustParseDate("2026-09-29")})
		first := b.step(at("2026-10-01T03:00:00Z"))
		second := b.step(at("2026-10-01T03:01:00Z"))
		wantFirst := 1
		if len(a.findings) == 1 {
			wantFirst = 0 // published before the stop
		}
		if len(first) != wantFirst || len(second) != 0 {
			t.Errorf("stopped at %s: before %d, first advance %+v, second %+v; want %d then 0", stop, len(a.findings), summarize(first), summarize(second), wantFirst)
		}
		if all := latest(append(a.findings, b.findings...)); len(all) != 1 || all[0].Name != "signal_delivered" || all[0].State != detect.Open {
			t.Errorf("stopped at %s: findings %+v, want signal_delivered open once", stop, summarize(all))
		}
	}
}

func ownsParity(n uint32) func(model.BatchKey) bool {
	return func(k model.BatchKey) bool {
		h := fnv.New32a()
		h.Write([]byte(k.String()))
		return h.Sum32()%2 == n
	}
}

// TestTwoInstancesAndHandOver: two instances split the batches by an
// ownership predicate (as the wiring splits them by partition); halfway,
// one leaves and the other takes its batches over from the stored history
// and the published findings. Together they publish the same findings as
// one instance: none twice, none missing.
func TestTwoInstancesAndHandOver(t *testing.T) {
	contracts := seedContracts(t)
	const days = 10
	ts := steps(days)
	events := genHistory(rand.New(rand.NewPCG(11, 7)), days)
	ref := newPlayer(mustNew(t, detect.Config{Contracts: contracts, From: genFrom}), events, nil)
	for _, safe := range ts {
		ref.step(safe)
	}
	// Cut at 18:00Z and 19:20Z (while batches are on their way) and halfway.
	for _, cut := range []int{(4*24 + 18) * 3, (6*24+19)*3 + 1, len(ts) / 2} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) { handOver(t, contracts, events, ts, cut, ref.findings) })
	}
}

func handOver(t *testing.T, contracts detect.Contracts, events []model.Event, ts []time.Time, cut int, ref []detect.Finding) {
	var inst [2]*player
	for i := range inst {
		owns := ownsParity(uint32(i))
		inst[i] = newPlayer(mustNew(t, detect.Config{Contracts: contracts, Owns: owns, From: genFrom}), events, nil)
		inst[i].route = owns
	}
	for _, safe := range ts[:cut] {
		inst[0].step(safe)
		inst[1].step(safe)
	}
	if len(inst[0].findings) == 0 || len(inst[1].findings) == 0 {
		t.Fatalf("findings %d and %d: each instance must have work for the test to mean anything", len(inst[0].findings), len(inst[1].findings))
	}
	// Instance 1 leaves: instance 0 owns everything and takes over.
	left := inst[1]
	if n := left.d.Release(ownsParity(1)); n == 0 {
		t.Error("Release forgot nothing")
	}
	if st := left.d.Stats(); st.Open+st.Closed != 0 {
		t.Errorf("after releasing everything: %+v", st)
	}
	heir := inst[0]
	heir.d.SetOwns(nil)
	heir.route = nil
	for _, k := range left.keys {
		for _, e := range left.history[k] {
			heir.d.Observe(&e)
			heir.history[k] = append(heir.history[k], e)
		}
		heir.keys = append(heir.keys, k)
	}
	if err := heir.d.Restore(latest(left.findings)...); err != nil {
		t.Fatal(err)
	}
	for _, safe := range ts[cut:] {
		heir.step(safe)
	}
	got := summarizeSorted(append(slices.Clone(inst[0].findings), left.findings...))
	want := summarizeSorted(ref)
	if !slices.Equal(got, want) {
		t.Fatalf("two instances published %d records, one published %d; first difference:\n%s", len(got), len(want), diffSummaries(got, want))
	}
}

type record struct {
	Fingerprint string
	summary
	RaisedAt, ResolvedAt time.Time
}

func summarizeSorted(fs []detect.Finding) []record {
	out := make([]record, len(fs))
	for i, f := range fs {
		out[i] = record{f.Fingerprint, summarize(fs[i : i+1])[0], f.RaisedAt, f.ResolvedAt}
	}
	slices.SortFunc(out, func(a, b record) int {
		return cmp.Or(cmp.Compare(a.Fingerprint, b.Fingerprint), cmp.Compare(a.Seq, b.Seq))
	})
	return out
}

func diffSummaries(got, want []record) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("got  %+v\nwant %+v", got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("extra %+v", got[len(want)])
	}
	if len(want) > len(got) {
		return fmt.Sprintf("missing %+v", want[len(got)])
	}
	return "none"
}

// TestNoJudgementBeforeEvidence: a detector that has just restored its
// history and findings is advanced by the stream before its first
// watermark, with a zero safe time. It must publish nothing then (as of no
// evidence every batch looks empty: the restored open findings would all
// be resolved, with no evidence_as_of, which the results consumer rejects),
// and at the first advance with evidence exactly what a detector that
// never stopped publishes.
func TestNoJudgementBeforeEvidence(t *testing.T) {
	contracts := seedContracts(t)
	cfg := detect.Config{Contracts: contracts, From: model.MustParseDate("2026-09-29")}
	a := newPlayer(mustNew(t, cfg), seedEvents(t), nil)
	for s := at("2026-09-29T00:00:00Z"); !s.After(at("2026-10-01T03:00:00Z")); s = s.Add(30 * time.Minute) {
		a.step(s)
	}
	if open := latest(a.findings); len(open) == 0 || open[0].State != detect.Open {
		t.Fatalf("the seed raised %+v by 2026-10-01T03:00Z; want an open finding to restore", summarize(open))
	}
	b := a.restart(t, cfg)
	if fs := b.d.Advance(at("2026-10-01T03:01:00Z"), time.Time{}); len(fs) != 0 {
		t.Fatalf("advance with no evidence yet published %d records, e.g. %+v; want none", len(fs), summarize(fs)[0])
	}
	if fs := b.step(at("2026-10-01T03:02:00Z")); len(fs) != 0 {
		t.Errorf("first advance with evidence published %+v; want nothing (all published before the restart)", summarize(fs))
	}

	// A batch whose restored finding has no history read back (it is
	// suspended until the wiring resumes it) is not judged as of nothing
	// either.
	c := mustNew(t, cfg)
	if err := c.Restore(latest(a.findings)...); err != nil {
		t.Fatal(err)
	}
	for _, k := range c.Suspended() {
		c.Resume(k)
	}
	if fs := c.Advance(at("2026-10-01T03:01:00Z"), time.Time{}); len(fs) != 0 {
		t.Fatalf("advance with no evidence yet published %d records, e.g. %+v; want none", len(fs), summarize(fs)[0])
	}
	for _, f := range c.Advance(at("2026-10-01T03:02:00Z"), at("2026-10-01T03:02:00Z")) {
		if f.EvidenceAsOf.IsZero() {
			t.Errorf("finding %s %s/%s published without evidence_as_of", f.Batch, f.Kind, f.Name)
		}
	}
}

// TestRestoredAliveAsOfEvidence: a detector that restores a history in
// which a process (loader) also has a heartbeat stamped after the first
// evaluation's safe time names that process alive with its heartbeat as
// of the safe time, as diagnose as of that time does (it used to keep only
// the latest heartbeat it observed, the later one, and so drop loader);
// once the safe time passes the later heartbeat, that one is named. With
// a floor (the wiring's clock when it starts reading history back) the
// same holds.
func TestRestoredAliveAsOfEvidence(t *testing.T) {
	contracts := seedContracts(t)
	k := model.BatchKey{Pipeline: "account-balance-snapshot.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	hb := func(id, system, component, tm string) model.Event {
		return model.Event{Spec: model.SpecV1, ID: id, Type: model.ProcessHeartbeat, Time: at(tm), Pipeline: k.Pipeline,
			System: model.System(system), Component: component}
	}
	history := append(seedEvents(t),
		hb("hb-relay", "exchange", "relay-1", "2026-10-01T02:00:00Z"),
		hb("hb-loader-1", "consumer", "loader", "2026-10-01T02:30:00Z"),
		hb("hb-loader-2", "consumer", "loader", "2026-10-01T04:00:00Z"), // after the first safe time
	)
	alive := func(d replay.Diagnosis) string {
		var s []string
		for _, h := range d.Alive {
			s = append(s, h.Component+"@"+h.At.Format("15:04"))
		}
		return strings.Join(s, " ")
	}
	diagnose := func(asOf time.Time) string {
		set := batches.New(contracts, asOf)
		for i := range history {
			set.Add(&history[i])
		}
		d, ok := set.DiagnoseOne(k)
		if !ok {
			t.Fatalf("diagnose has no %s", k)
		}
		return alive(d)
	}
	for _, floor := range []time.Time{{}, at("2026-10-01T03:00:00Z")} {
		d := mustNew(t, detect.Config{Contracts: contracts, From: model.MustParseDate("2026-09-29")})
		if !floor.IsZero() {
			d.Floor(floor)
		}
		for i := range history {
			d.Observe(&history[i])
		}
		for _, safe := range []time.Time{at("2026-10-01T03:00:00Z"), at("2026-10-01T04:30:00Z")} {
			fs := d.Advance(safe, safe)
			got, ok := d.Diagnosis(k)
			if !ok {
				t.Fatalf("floor %v, safe %v: %s is not open", floor, safe, k)
			}
			want := diagnose(safe)
			if g := alive(got); g != want {
				t.Errorf("floor %v, safe %v: the detector says alive %q, diagnose %q", floor, safe, g, want)
			}
			for _, f := range fs {
				if f.Batch == k {
					if g := alive(f.Diagnosis); g != want {
						t.Errorf("floor %v, safe %v: the finding says alive %q, diagnose %q", floor, safe, g, want)
					}
				}
			}
		}
	}
}

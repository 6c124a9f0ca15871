package fold_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/fold"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

var asOf = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// contracts gives every pipeline a daily schedule, so continuity across
// window edges matters.
type contracts struct{}

func (contracts) For(p string) *contract.Contract {
	k := contract.Default(p)
	k.Schedule = contract.Daily
	k.BatchID = contract.MustTemplate("{yyyymmdd}")
	return k
}

var ladder = []model.EventType{model.JobSucceeded, model.ArtifactFinalized, model.SignalPublished,
	model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified, model.ConsumeSucceeded}

// events returns the events of pipelines with days daily batches each, each
// batch stopping at a random rung (some delivered, some not, some days
// missing), with duplicates and heartbeats, plus a pipeline of heartbeats
// only. Deterministic.
func events(pipelines []string, days int) []model.Event {
	r := rand.New(rand.NewSource(7))
	var out []model.Event
	start := model.MustParseDate("2026-06-01")
	for _, p := range pipelines {
		for d := range days {
			if r.Intn(10) == 0 {
				continue // a hole in the calendar
			}
			day := start.AddDays(d)
			t0 := day.In(time.UTC).Add(20 * time.Hour)
			stop := len(ladder)
			if r.Intn(3) == 0 {
				stop = r.Intn(len(ladder))
			}
			for i, typ := range ladder[:stop] {
				e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s-%d", p, day.Compact(), i), Type: typ,
					Time: t0.Add(time.Duration(i) * time.Minute), Pipeline: p, BusinessDate: day, BatchID: day.Compact(), System: model.Producer}
				if typ.NeedsObject() {
					e.Object = "f_" + day.Compact()
				}
				if typ.NeedsRows() {
					e.Rows, e.HasRows = 10, true
				}
				out = append(out, e)
				if r.Intn(20) == 0 {
					out = append(out, e) // delivered twice
				}
			}
		}
		out = append(out, model.Event{Spec: model.SpecV1, ID: p + "-hb", Type: model.ProcessHeartbeat,
			Time: asOf.Add(-time.Hour), Pipeline: p, System: model.Consumer, Component: "c1"})
	}
	out = append(out, model.Event{Spec: model.SpecV1, ID: "hb-only", Type: model.ProcessHeartbeat,
		Time: asOf.Add(-time.Hour), Pipeline: "heartbeats.only", System: model.Consumer, Component: "c1"})
	return out
}

// encode is the render of the tests: the JSON of a piece's diagnoses, one
// per line, and how many there are.
type encoded struct {
	json []byte
	n    int
}

func encode(ds []replay.Diagnosis) encoded {
	var b []byte
	for i := range ds {
		b = ds[i].AppendJSON(b)
		b = append(b, '\n')
	}
	return encoded{b, len(ds)}
}

// run folds evs with opts and returns the output and the number of pieces.
func run(t *testing.T, evs []model.Event, opts fold.Options) (string, int) {
	t.Helper()
	var out bytes.Buffer
	pieces := 0
	f := fold.New(context.Background(), contracts{}, asOf, opts, encode, func(e encoded) error {
		pieces++
		if e.n == 0 {
			t.Error("an empty piece was yielded")
		}
		out.Write(e.json)
		return nil
	})
	for i := range evs {
		if err := f.Add(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	return out.String(), pieces
}

// single is the reference: one batches.Set over every event, diagnosed in
// one call, without pipelines, windows or workers.
func single(evs []model.Event) string {
	s := batches.New(contracts{}, asOf)
	for i := range evs {
		s.Add(&evs[i])
	}
	return string(encode(s.Diagnose(nil)).json)
}

func TestFoldEqualsSinglePass(t *testing.T) {
	pipelines := []string{"c.daily", "a.daily", "b.daily"}
	const days = 60
	evs := events(pipelines, days)
	want := single(evs)
	if n := strings.Count(want, "\n"); n < 3*days/2 {
		t.Fatalf("reference has %d batches: the generator is broken", n)
	}
	shuffled := slices.Clone(evs)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	grouped := slices.Clone(evs)
	slices.SortStableFunc(grouped, func(a, b model.Event) int { return strings.Compare(a.Pipeline, b.Pipeline) })

	tests := []struct {
		name       string
		evs        []model.Event
		opts       fold.Options
		wantPieces int // 0: one per pipeline with batches
	}{
		{"one piece per pipeline, one worker", shuffled, fold.Options{Workers: 1}, 3},
		{"one piece per pipeline, many workers", shuffled, fold.Options{Workers: 4}, 3},
		// 60 days minus holes: 9 windows of 6 or so per pipeline; a
		// window edge falls between a batch and its previous one.
		{"windows of 6", shuffled, fold.Options{Workers: 3, Window: 6}, -1},
		{"windows of 1", evs, fold.Options{Workers: 2, Window: 1}, -1},
		{"grouped input, windows", grouped, fold.Options{Grouped: true, Workers: 2, Window: 5}, -1},
		{"grouped input, one worker", grouped, fold.Options{Grouped: true, Workers: 1}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pieces := run(t, tt.evs, tt.opts)
			if got != want {
				t.Fatalf("output differs from the single pass:\n%s", firstDiff(got, want))
			}
			switch {
			case tt.wantPieces > 0 && pieces != tt.wantPieces:
				t.Errorf("%d pieces, want %d", pieces, tt.wantPieces)
			case tt.wantPieces < 0 && pieces <= 3*2:
				t.Errorf("%d pieces: the window path was not taken", pieces)
			}
		})
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// TestFoldGroupedReleasesPipelines checks that grouped input hands a
// pipeline over as soon as the next starts, and rejects input that is not
// grouped.
func TestFoldGroupedReleasesPipelines(t *testing.T) {
	evs := events([]string{"a.daily", "b.daily"}, 10)
	slices.SortStableFunc(evs, func(a, b model.Event) int { return strings.Compare(a.Pipeline, b.Pipeline) })
	var yielded []string
	// The history covers its dates only: the calendar of the months after
	// them (absent batches, each a batch of its own) is not what this test
	// counts.
	var last model.Date
	for i := range evs {
		if evs[i].BusinessDate.Compare(last) > 0 {
			last = evs[i].BusinessDate
		}
	}
	f := fold.New(context.Background(), contracts{}, asOf, fold.Options{Grouped: true, Workers: 1, To: last}, encode, func(e encoded) error {
		yielded = append(yielded, string(e.json))
		return nil
	})
	aBatches := 0
	seen := map[model.BatchKey]bool{}
	for i := range evs {
		if evs[i].Pipeline == "a.daily" && evs[i].Type.HasBatch() && !seen[evs[i].Key()] {
			seen[evs[i].Key()] = true
			aBatches++
		}
	}
	for i := range evs {
		if evs[i].Pipeline == "b.daily" && f.Batches() == 0 {
			if err := f.Add(&evs[i]); err != nil {
				t.Fatal(err)
			}
			if f.Batches() != aBatches {
				t.Fatalf("after the first event of b.daily, %d batches handed over, want a.daily's %d", f.Batches(), aBatches)
			}
			continue
		}
		if err := f.Add(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	// a.daily again, after b.daily: not grouped.
	back := evs[0]
	if err := f.Add(&back); err == nil || !strings.Contains(err.Error(), "not grouped by pipeline") {
		t.Fatalf("a pipeline that came back was accepted (err %v)", err)
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(yielded) != 2 || !strings.Contains(yielded[0], `"pipeline":"a.daily"`) || !strings.Contains(yielded[1], `"pipeline":"b.daily"`) {
		t.Fatalf("yielded %d pieces, want a.daily then b.daily", len(yielded))
	}
}

func TestFoldErrors(t *testing.T) {
	evs := events([]string{"a.daily", "b.daily", "c.daily"}, 20)
	stop := errors.New("disk full")
	t.Run("yield error stops the fold", func(t *testing.T) {
		calls := 0
		f := fold.New(context.Background(), contracts{}, asOf, fold.Options{Workers: 2, Window: 3}, encode, func(encoded) error {
			calls++
			return stop
		})
		for i := range evs {
			if err := f.Add(&evs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Finish(); !errors.Is(err, stop) {
			t.Fatalf("Finish: %v, want %v", err, stop)
		}
		if calls != 1 {
			t.Errorf("yield called %d times after it failed, want once", calls)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := fold.New(ctx, contracts{}, asOf, fold.Options{Workers: 2, Window: 3}, encode, func(encoded) error { return nil })
		for i := range evs {
			if err := f.Add(&evs[i]); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		if err := f.Finish(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Finish: %v, want context.Canceled", err)
		}
	})
	t.Run("add after finish", func(t *testing.T) {
		f := fold.New(context.Background(), contracts{}, asOf, fold.Options{}, encode, func(encoded) error { return nil })
		if err := f.Finish(); err != nil {
			t.Fatal(err)
		}
		if err := f.Add(&evs[0]); err == nil {
			t.Fatal("Add after Finish accepted")
		}
	})
}

// TestFoldRangeWithContext: a range read the way diagnose reads ClickHouse
// (the events from the context start of the range on, the pipelines'
// first dates given by First, batches before From folded for continuity
// only) gives the diagnoses of a fold over the whole history, restricted
// to the range: the first batch of the range included, whose previous
// batch lies before it. Without First, the fold would take the context
// date as the start of the history; without the context, the first batch
// would have no previous batch to check.
func TestFoldRangeWithContext(t *testing.T) {
	pipelines := []string{"a.daily", "b.daily"}
	from := model.MustParseDate("2026-06-20")
	// a.daily never produced the batch before the range: only the
	// pipeline's first date tells a gap from the start of the history.
	evs := slices.DeleteFunc(events(pipelines, 40), func(e model.Event) bool {
		return e.Pipeline == "a.daily" && e.BusinessDate == from.AddDays(-1)
	})
	var want strings.Builder
	for _, l := range strings.SplitAfter(single(evs), "\n") {
		if l != "" && !strings.Contains(l, `"business_date":"2026-06-0`) && !strings.Contains(l, `"business_date":"2026-06-1`) {
			want.WriteString(l)
		}
	}
	if !strings.Contains(want.String(), `"kind":"continuity_gap"`) {
		t.Fatal("no continuity gap in range: the test proves nothing")
	}
	first := map[string]model.Date{}
	var read []model.Event
	for _, e := range evs {
		if !e.Type.HasBatch() {
			read = append(read, e)
			continue
		}
		if d, ok := first[e.Pipeline]; !ok || e.BusinessDate.Compare(d) < 0 {
			first[e.Pipeline] = e.BusinessDate
		}
		if e.BusinessDate.Compare(batches.ContextStart(contracts{}.For(e.Pipeline), e.Pipeline, from)) >= 0 {
			read = append(read, e)
		}
	}
	got, _ := run(t, read, fold.Options{Workers: 2, Window: 7, From: from, First: func(p string) (model.Date, bool) {
		d, ok := first[p]
		return d, ok
	}})
	if got != want.String() {
		gl, wl := strings.Split(got, "\n"), strings.Split(want.String(), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%d lines, want %d; line %d differs:\n got %s\nwant %s", len(gl), len(wl), i, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
	// Without the pipelines' first dates the range's first batch of
	// a.daily reads as the start of the history, and its gap goes unseen.
	if noFirst, _ := run(t, read, fold.Options{From: from}); noFirst == want.String() {
		t.Fatal("the range's first batches have the same diagnosis with and without First: the test proves nothing")
	}
}

package history_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// fdEvents is one job.started per business date of pipeline from first,
// n dates.
func fdEvents(pipeline string, first string, n int) []model.Event {
	d := model.MustParseDate(first)
	var out []model.Event
	for i := range n {
		bd := d.AddDays(i)
		out = append(out, model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s", pipeline, bd.Compact()), Type: model.JobStarted,
			Time: bd.In(time.UTC).Add(17 * time.Hour), Pipeline: pipeline, BusinessDate: bd, BatchID: bd.Compact(), System: model.Producer, Component: "p1"})
	}
	return out
}

// TestFirstDateCache checks the cache's rule (docs/serve.md, "Caches"):
// its Census equals Store.Census when the dates are fresh; events of the
// read range (a new batch, a new pipeline) show at once, without a new
// read of the dates; an earlier date before the range shows only once
// the dates are TTL old, and then at the latest after TTL + Grace.
func TestFirstDateCache(t *testing.T) {
	ctx, conn, db, s := newDatabase(t, "store_firstdates")
	if err := s.Events(ctx, append(fdEvents("fd.a", "2026-09-01", 10), fdEvents("fd.b", "2026-09-05", 6)...)); err != nil {
		t.Fatal(err)
	}
	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // seconds after t0
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cache := history.NewFirstDateCache(st, 30*time.Second, 10*time.Second)
	cache.Clock = func() time.Time { return t0.Add(time.Duration(clock.Load()) * time.Second) }

	d := model.MustParseDate
	filters := []struct {
		name string
		f    history.CensusFilter
	}{
		{"every pipeline", history.CensusFilter{ReadFrom: d("2026-09-05"), From: d("2026-09-06"), To: d("2026-09-08")}},
		{"before fd.b starts", history.CensusFilter{ReadFrom: d("2026-09-02"), From: d("2026-09-03"), To: d("2026-09-04")}},
		{"rows only in the context day", history.CensusFilter{ReadFrom: d("2026-09-10"), From: d("2026-09-11"), To: d("2026-09-12"),
			Scheduled: []string{"fd.a"}}},
		{"scheduled, no rows in range", history.CensusFilter{ReadFrom: d("2026-09-20"), From: d("2026-09-21"), To: d("2026-09-22"),
			Scheduled: []string{"fd.a", "fd.b", "fd.none"}}},
		{"named pipelines", history.CensusFilter{Pipelines: []string{"fd.b", "fd.none"}, Scheduled: []string{"fd.b", "fd.none"},
			ReadFrom: d("2026-09-01"), From: d("2026-09-01"), To: d("2026-09-30")}},
		{"named, range after", history.CensusFilter{Pipelines: []string{"fd.a"}, Scheduled: []string{"fd.a"},
			ReadFrom: d("2026-09-20"), From: d("2026-09-20"), To: d("2026-09-20")}},
	}
	same := func(when string) {
		t.Helper()
		for _, tt := range filters {
			want, err := st.Census(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cache.Census(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: cached census\n%+v\nwant the store's\n%+v", when, tt.name, got, want)
			}
			// The same counted from the events of the range, as serve
			// reads them (no copies stored here: Rows agree too).
			seen := history.NewRangeCount(tt.f.From, 0)
			read := tt.f.Pipelines
			if read == nil {
				read = []string{"fd.a", "fd.b", "fd.c"}
			}
			for _, p := range read {
				evs, err := st.Events(ctx, history.Filter{Pipeline: p, From: tt.f.ReadFrom, To: tt.f.To})
				if err != nil {
					t.Fatal(err)
				}
				for i := range evs {
					seen.Add(&evs[i])
				}
			}
			counted, err := cache.CensusOf(ctx, seen, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(counted, want) {
				t.Errorf("%s, %s: census counted from the events\n%+v\nwant the store's\n%+v", when, tt.name, counted, want)
			}
			// In two shards by the name's length, each counting only its
			// own pipelines' events: together, sorted, the same.
			var united []history.PipelineRows
			for shard := range 2 {
				own := func(p string) bool { return len(p)%2 == shard }
				seen := history.NewRangeCount(tt.f.From, 0)
				for _, p := range read {
					if !own(p) {
						continue
					}
					evs, err := st.Events(ctx, history.Filter{Pipeline: p, From: tt.f.ReadFrom, To: tt.f.To})
					if err != nil {
						t.Fatal(err)
					}
					for i := range evs {
						seen.Add(&evs[i])
					}
				}
				part, err := cache.CensusOfShard(ctx, seen, tt.f, own)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range part {
					if !own(p.Pipeline) {
						t.Errorf("%s, %s: shard %d's census has %s, of the other shard", when, tt.name, shard, p.Pipeline)
					}
				}
				united = append(united, part...)
			}
			slices.SortFunc(united, func(a, b history.PipelineRows) int { return strings.Compare(a.Pipeline, b.Pipeline) })
			if len(united) == 0 && len(want) == 0 {
				united = want
			}
			if !reflect.DeepEqual(united, want) {
				t.Errorf("%s, %s: census of the two shards\n%+v\nwant the store's\n%+v", when, tt.name, united, want)
			}
		}
	}
	same("fresh")

	// New events within the ranges read: a new batch, a new pipeline. They
	// show at once, though the dates are not read again.
	if err := s.Events(ctx, append(fdEvents("fd.a", "2026-09-20", 1), fdEvents("fd.c", "2026-09-06", 2)...)); err != nil {
		t.Fatal(err)
	}
	clock.Store(29)
	same("new events in range, dates 29 s old")

	// History loaded into the past, before every range read: not seen
	// while the dates are younger than TTL.
	if err := s.Events(ctx, fdEvents("fd.a", "2026-08-20", 1)); err != nil {
		t.Fatal(err)
	}
	f := filters[0].f
	got, err := cache.Census(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Pipeline != "fd.a" || got[0].First != d("2026-09-01") {
		t.Errorf("29 s after the read: fd.a starts %+v, want the cached 2026-09-01", got[0])
	}
	// TTL + Grace after the read the dates have been read again (a call
	// TTL after the read starts the read and uses the old dates meanwhile;
	// one after TTL + Grace waits for it).
	clock.Store(30)
	if _, err := cache.Dates(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Store(41)
	got, err = cache.Census(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Pipeline != "fd.a" || got[0].First != d("2026-08-20") {
		t.Errorf("41 s after the first read: fd.a starts %+v, want 2026-08-20", got[0])
	}
	same("after the dates were read again")
}

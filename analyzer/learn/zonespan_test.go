package learn

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// TestSpanCacheDate: every minute of a few days on each side of both
// daylight-saving changes of a year (and of a year past the zone
// tables, where the zone's rule takes over), the gap and the repeated
// hour included, resolve as time.Date resolves them, through one cache
// per zone that hits and misses as the minutes go by.
func TestSpanCacheDate(t *testing.T) {
	zones := loadZones(t, "UTC", "Europe/London", "America/New_York", "Europe/Dublin", "Australia/Sydney",
		"Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham", "America/St_Johns")
	for _, tc := range []struct {
		name  string
		dates []model.Date
	}{
		{"2026 spring (Europe, America)", span("2026-03-06", 4, "2026-03-27", 4)},
		{"2026 autumn (Europe, America)", span("2026-10-23", 4, "2026-10-30", 4)},
		{"2026 southern changes", span("2026-04-03", 3, "2026-09-25", 4)},
		{"2061 (past the tables)", span("2061-03-11", 3, "2061-03-25", 3, "2061-10-28", 3, "2061-11-03", 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, loc := range zones {
				var c spanCache
				for _, d := range tc.dates {
					for mm := -1440; mm <= 2*1440; mm++ {
						want := time.Date(d.Year, d.Month, d.Day, 0, mm, 0, 0, loc).Unix()
						if got := c.date(loc, int64(d.DaysSinceEpoch())*secondsPerDay+int64(mm)*60); got != want {
							t.Fatalf("%s %v +%d min: %v, time.Date says %v", loc, d, mm, time.Unix(got, 0).UTC(), time.Unix(want, 0).UTC())
						}
					}
				}
			}
		})
	}
}

// span lists, for each pair of a date and n, the n dates from that date.
func span(pairs ...any) []model.Date {
	var out []model.Date
	for i := 0; i < len(pairs); i += 2 {
		d := model.MustParseDate(pairs[i].(string))
		for j := range pairs[i+1].(int) {
			out = append(out, d.AddDays(j))
		}
	}
	return out
}

// TestByCachedMatchesUncached: By through the remembered offset periods
// gives what the same expectations without them give (every instant
// from time.Date), for every date of two years in a pipeline of London
// tied with New York and UTC, at usual times in the gap and the repeated
// hour of London's changes, before midnight and the day after.
func TestByCachedMatchesUncached(t *testing.T) {
	z := loadZones(t, "Europe/London", "America/New_York", "UTC")
	cached := &Expected{Pipeline: "p", Zone: z[0], ties: []tie{{loc: z[1], ahead: -300}, {loc: z[2], ahead: -60}}}
	minutes := map[model.Boundary]float64{
		model.Produced: 90.5, model.Signaled: 60, model.Transferred: -30.25, model.Identified: 1500, model.Consumed: 119,
	}
	for b, m := range minutes {
		cached.by[b], cached.n[b] = m, MinArrivals
	}
	cached.spans = []*spanCache{{}, {}, {}}
	uncached := *cached
	uncached.spans = nil
	for d := model.MustParseDate("2026-01-01"); d.Year < 2028; d = d.AddDays(1) {
		k := model.BatchKey{Pipeline: "p", BusinessDate: d, BatchID: d.Compact()}
		for b := range minutes {
			got, ok := cached.By(k, b)
			want, wok := uncached.By(k, b)
			if ok != wok || !got.Equal(want) || got.Location() != want.Location() {
				t.Fatalf("By(%v, %s) = %v %v, uncached %v %v", d, b, got, ok, want, wok)
			}
		}
	}
}

// TestByCachedShared: expectations shared by goroutines (serve annotates
// the pages of concurrent requests with one set) give each the answer of
// an Expected of its own, with the race detector quiet.
func TestByCachedShared(t *testing.T) {
	z := loadZones(t, "America/New_York", "Europe/London")
	shared := &Expected{Pipeline: "p", Zone: z[0], ties: []tie{{loc: z[1], ahead: 300}}, spans: []*spanCache{{}, {}}}
	shared.by[model.Produced], shared.n[model.Produced] = 125, MinArrivals
	alone := *shared
	alone.spans = nil
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine walks the dates its own way, so that the
			// periods remembered change under the others.
			for i := range 800 {
				d := model.MustParseDate("2026-01-01").AddDays((i*(g+1)*37 + g*101) % 800)
				k := model.BatchKey{Pipeline: "p", BusinessDate: d, BatchID: d.Compact()}
				got, _ := shared.By(k, model.Produced)
				want, _ := alone.By(k, model.Produced)
				if !got.Equal(want) {
					errs <- fmt.Sprintf("By(%v) = %v, alone %v", d, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func loadZones(t *testing.T, names ...string) []*time.Location {
	t.Helper()
	var out []*time.Location
	for _, n := range names {
		loc, err := time.LoadLocation(n)
		if err != nil {
			t.Fatalf("load zone %s: %v", n, err)
		}
		out = append(out, loc)
	}
	return out
}

package contract_test

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// firstOccurrence is the calendar rule read the slow way, independently of
// contract.WallClock: the earliest quarter hour (every zone's offset is a
// whole number of quarter hours) within 15 hours of the naive
// time at which the clock in loc reads date + tod; for a time the clock
// skips, the time taken under the offset in force before the change (it
// falls the gap later on the clock).
func firstOccurrence(d model.Date, tod time.Duration, loc *time.Location) time.Time {
	naive := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Add(tod)
	wy, wm, wd := naive.Date()
	wh, wmi, ws := naive.Clock()
	for t := naive.Add(-15 * time.Hour); t.Before(naive.Add(15 * time.Hour)); t = t.Add(15 * time.Minute) {
		l := t.In(loc)
		y, m, dd := l.Date()
		h, mi, s := l.Clock()
		if y == wy && m == wm && dd == wd && h == wh && mi == wmi && s == ws {
			return t
		}
	}
	_, before := naive.Add(-15 * time.Hour).In(loc).Zone()
	return naive.Add(-time.Duration(before) * time.Second)
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("zone %s: %v", name, err)
	}
	return loc
}

// TestDSTStarts: hourly and daily batch starts and absolute deadlines on
// both daylight-saving transitions of 2026 in four zones. A time that
// happens twice is its first occurrence (Go's time.Date gives the second
// one in European zones); a skipped time is the gap later on the clock.
func TestDSTStarts(t *testing.T) {
	type tc struct {
		zone, date string
		hh         int
		want       string // UTC instant of the start
	}
	tests := []tc{
		// Europe/London: spring 2026-03-29 01:00 GMT -> 02:00 BST; autumn 2026-10-25 02:00 BST -> 01:00 GMT.
		{"Europe/London", "2026-03-29", 0, "2026-03-29T00:00:00Z"},
		{"Europe/London", "2026-03-29", 1, "2026-03-29T01:00:00Z"}, // skipped: 02:00 BST
		{"Europe/London", "2026-03-29", 2, "2026-03-29T01:00:00Z"}, // 02:00 BST, the same instant
		{"Europe/London", "2026-10-25", 0, "2026-10-24T23:00:00Z"},
		{"Europe/London", "2026-10-25", 1, "2026-10-25T00:00:00Z"}, // twice: 01:00 BST first
		{"Europe/London", "2026-10-25", 2, "2026-10-25T02:00:00Z"},
		// Europe/Berlin: spring 2026-03-29 02:00 CET -> 03:00 CEST; autumn 2026-10-25 03:00 CEST -> 02:00 CET.
		{"Europe/Berlin", "2026-03-29", 2, "2026-03-29T01:00:00Z"}, // skipped: 03:00 CEST
		{"Europe/Berlin", "2026-03-29", 3, "2026-03-29T01:00:00Z"},
		{"Europe/Berlin", "2026-10-25", 2, "2026-10-25T00:00:00Z"}, // twice: 02:00 CEST first
		{"Europe/Berlin", "2026-10-25", 3, "2026-10-25T02:00:00Z"},
		// America/New_York: spring 2026-03-08 02:00 EST -> 03:00 EDT; autumn 2026-11-01 02:00 EDT -> 01:00 EST.
		{"America/New_York", "2026-03-08", 2, "2026-03-08T07:00:00Z"}, // skipped: 03:00 EDT
		{"America/New_York", "2026-03-08", 3, "2026-03-08T07:00:00Z"},
		{"America/New_York", "2026-11-01", 1, "2026-11-01T05:00:00Z"}, // twice: 01:00 EDT first
		{"America/New_York", "2026-11-01", 2, "2026-11-01T07:00:00Z"},
		// Australia/Sydney: autumn 2026-04-05 03:00 AEDT -> 02:00 AEST; spring 2026-10-04 02:00 AEST -> 03:00 AEDT.
		{"Australia/Sydney", "2026-04-05", 2, "2026-04-04T15:00:00Z"}, // twice: 02:00 AEDT first
		{"Australia/Sydney", "2026-04-05", 3, "2026-04-04T17:00:00Z"},
		{"Australia/Sydney", "2026-10-04", 2, "2026-10-03T16:00:00Z"}, // skipped: 03:00 AEDT
		{"Australia/Sydney", "2026-10-04", 3, "2026-10-03T16:00:00Z"},
	}
	for _, tt := range tests {
		loc := mustZone(t, tt.zone)
		date := model.MustParseDate(tt.date)
		want, _ := time.Parse(time.RFC3339, tt.want)
		hourly := &contract.Contract{Pipeline: "p", Schedule: contract.Hourly, Location: loc, BatchID: contract.MustTemplate("{yyyymmdd}{hh}")}
		key := model.BatchKey{Pipeline: "p", BusinessDate: date, BatchID: date.Compact() + twoDigits(tt.hh)}
		got, ok := hourly.Start(key)
		if !ok || !got.Equal(want) {
			t.Errorf("%s %s hour %02d: hourly start %v, want %v", tt.zone, tt.date, tt.hh, got.UTC(), want)
		}
		if ref := firstOccurrence(date, time.Duration(tt.hh)*time.Hour, loc); !ref.Equal(want) {
			t.Errorf("%s %s hour %02d: the reference rule gives %v, the table %v", tt.zone, tt.date, tt.hh, ref, want)
		}
		// The same wall time as an absolute deadline of a daily batch of the
		// day before ("business_date + 1d hh:00").
		daily := contract.Default("p")
		daily.Schedule, daily.Location = contract.Daily, loc
		daily.Deadlines[model.Produced] = contract.Deadline{Kind: contract.Absolute, Days: 1, TimeOfDay: time.Duration(tt.hh) * time.Hour}
		prev := date.AddDays(-1)
		due, okD := daily.Due(model.Produced, model.BatchKey{Pipeline: "p", BusinessDate: prev, BatchID: prev.Compact()},
			func(model.Boundary) (time.Time, bool) { return time.Time{}, false }, time.Time{})
		if !okD || !due.Equal(want) {
			t.Errorf("%s %s %02d:00 as a deadline: %v, want %v", tt.zone, tt.date, tt.hh, due.UTC(), want)
		}
	}
	// Daily starts (midnight) on every transition day and the day after.
	for _, zone := range []string{"Europe/London", "Europe/Berlin", "America/New_York", "Australia/Sydney"} {
		loc := mustZone(t, zone)
		c := contract.Default("p")
		c.Schedule, c.Location = contract.Daily, loc
		for _, ds := range []string{"2026-03-08", "2026-03-09", "2026-03-29", "2026-03-30", "2026-04-05", "2026-04-06", "2026-10-04", "2026-10-05", "2026-10-25", "2026-10-26", "2026-11-01", "2026-11-02"} {
			d := model.MustParseDate(ds)
			got, ok := c.Start(model.BatchKey{Pipeline: "p", BusinessDate: d, BatchID: d.Compact()})
			if want := firstOccurrence(d, 0, loc); !ok || !got.Equal(want) {
				t.Errorf("%s %s: daily start %v, want %v", zone, ds, got, want)
			}
			if h, m, _ := got.In(loc).Clock(); h != 0 || m != 0 {
				t.Errorf("%s %s: daily start reads %02d:%02d on the clock, want 00:00", zone, ds, h, m)
			}
		}
	}
}

// TestWallClockEveryZoneEveryHour checks WallClock against the reference
// rule for every half hour of a year in zones east and west of Greenwich,
// with a 30-minute shift and one that skips midnight.
func TestWallClockEveryZoneEveryHour(t *testing.T) {
	for _, zone := range []string{"Europe/London", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe", "America/Santiago"} {
		loc := mustZone(t, zone)
		start := model.MustParseDate("2026-01-01")
		for n := 0; n < 365; n++ {
			d := start.AddDays(n)
			for tod := time.Duration(0); tod < 24*time.Hour; tod += 30 * time.Minute {
				if got, want := contract.WallClock(d, tod, loc), firstOccurrence(d, tod, loc); !got.Equal(want) {
					t.Fatalf("%s %s +%v: %v, want %v", zone, d, tod, got.UTC(), want.UTC())
				}
			}
		}
	}
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

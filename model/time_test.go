package model

import (
	"math/rand/v2"
	"testing"
	"time"
)

// slowParseTime is ParseTime without the fast path.
func slowParseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	t = t.UTC().Truncate(time.Millisecond)
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
}

func checkFastTime(t *testing.T, s string) {
	t.Helper()
	fast, ok := parseTimeFast(s)
	if !ok {
		return // the slow path decides; nothing to compare
	}
	slow, sok := slowParseTime(s)
	if !sok || !fast.Equal(slow) {
		t.Fatalf("%q: fast path %v, time.Parse %v (ok=%v)", s, fast, slow, sok)
	}
}

func TestParseTimeFastAgreesWithTimeParse(t *testing.T) {
	for _, s := range []string{
		"2026-10-01T01:20:05.120Z", "2026-10-01T01:20:05Z", "2026-10-01T01:20:05.1Z",
		"2026-10-01T01:20:05.123456789Z", "2026-10-01T09:20:05.120+08:00", "2026-09-30T20:20:05.120-05:00",
		"2024-02-29T00:00:00Z", "0000-01-01T00:30:00+01:00", "9999-12-31T23:59:59.999Z",
		"9999-12-31T23:59:59-01:00", "2026-02-29T00:00:00Z", "2026-10-01T24:00:00Z", "2026-10-01T01:20:60Z",
		"2026-10-01t01:20:05Z", "2026-10-01T01:20:05.Z", "2026-10-01T01:20:05+0800", "2026-10-01T01:20:05z",
	} {
		checkFastTime(t, s)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 200000; i++ {
		tm := time.UnixMilli(r.Int64N(253402300799999)).UTC()
		layouts := []string{time.RFC3339Nano, time.RFC3339, TimeLayout, "2006-01-02T15:04:05.000-07:00"}
		loc := time.FixedZone("", (r.IntN(48)-24)*1800)
		s := tm.In(loc).Format(layouts[r.IntN(len(layouts))])
		checkFastTime(t, s)
		if got, err := ParseTime(s); err == nil {
			want, _ := slowParseTime(s)
			if !got.Equal(want) {
				t.Fatalf("%q: ParseTime %v, want %v", s, got, want)
			}
		}
	}
}

func FuzzParseTimeFast(f *testing.F) {
	for _, s := range []string{"2026-10-01T01:20:05.120Z", "2026-10-01T09:20:05+08:00", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.9999-23:59"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkFastTime(t, s) })
}

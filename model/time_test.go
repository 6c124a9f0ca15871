package model_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// TestParseTimeRandom formats random millisecond instants in the layouts
// and offsets emitters use and checks that ParseTime returns the instant
// it was given, in UTC.
func TestParseTimeRandom(t *testing.T) {
	layouts := []string{time.RFC3339Nano, time.RFC3339, model.TimeLayout, "2006-01-02T15:04:05.000-07:00"}
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 20000; i++ {
		want := time.UnixMilli(r.Int64N(253402300799999)).UTC()
		layout := layouts[r.IntN(len(layouts))]
		if layout == time.RFC3339 {
			want = want.Truncate(time.Second)
		}
		s := want.In(time.FixedZone("", (r.IntN(48)-24)*1800)).Format(layout)
		got, err := model.ParseTime(s)
		if err != nil {
			// An offset may carry the local year outside 0000-9999.
			if want.Year() > 0 && want.Year() < 9999 {
				t.Fatalf("ParseTime(%q): %v", s, err)
			}
			continue
		}
		if !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("ParseTime(%q) = %v, want %v in UTC", s, got, want)
		}
	}
}

// FuzzParseTime checks that ParseTime never panics and that whatever it
// accepts is in UTC, whole milliseconds, and written back by AppendTime as
// a time ParseTime reads as the same instant.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{
		"2026-10-01T01:20:05.120Z", "2026-10-01T09:20:05+08:00", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59.9999-23:59", "2026-10-01T24:00:00Z", "2026-02-29T00:00:00Z", "2026-10-01t01:20:05z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := model.ParseTime(s)
		if err != nil {
			return
		}
		if got.Location() != time.UTC || got.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("ParseTime(%q) = %v: not UTC whole milliseconds", s, got)
		}
		enc := string(model.AppendTime(nil, got))
		back, err := model.ParseTime(enc)
		if err != nil || !back.Equal(got) {
			t.Fatalf("ParseTime(%q) = %v, written %q, read back %v, %v", s, got, enc, back, err)
		}
	})
}

// TestHumanTime checks the people's form of a time: UTC first, the
// contract's zone beside it, the day note when the dates differ, the
// precision the time has, and UTC alone without a zone.
func TestHumanTime(t *testing.T) {
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		return loc
	}
	shanghai, newYork, london := load("Asia/Shanghai"), load("America/New_York"), load("Europe/London")
	at := func(s string) time.Time {
		v, err := model.ParseTime(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		t    time.Time
		loc  *time.Location
		want string
	}{
		{"shanghai next day", at("2026-09-30T22:00:00Z"), shanghai, "2026-09-30 22:00 UTC (06:00 Asia/Shanghai, next day)"},
		{"shanghai same day", at("2026-09-30T01:20:05.120Z"), shanghai, "2026-09-30 01:20:05.120 UTC (09:20:05.120 Asia/Shanghai)"},
		{"new york previous day", at("2026-10-01T01:20:05Z"), newYork, "2026-10-01 01:20:05 UTC (21:20:05 America/New_York, previous day)"},
		// New York leaves daylight saving time at 06:00 UTC on 1 November
		// 2026: the same UTC hour is 01:30 before and after the change.
		{"new york before the dst change", at("2026-11-01T05:30:00Z"), newYork, "2026-11-01 05:30 UTC (01:30 America/New_York)"},
		{"new york after the dst change", at("2026-11-01T06:30:00Z"), newYork, "2026-11-01 06:30 UTC (01:30 America/New_York)"},
		{"london summer", at("2026-06-30T23:30:00Z"), london, "2026-06-30 23:30 UTC (00:30 Europe/London, next day)"},
		{"london winter, offset zero", at("2026-12-31T23:30:00Z"), london, "2026-12-31 23:30 UTC (23:30 Europe/London)"},
		{"utc contract", at("2026-09-30T22:00:00Z"), time.UTC, "2026-09-30 22:00 UTC"},
		{"no contract", at("2026-09-30T17:31:40.750Z"), nil, "2026-09-30 17:31:40.750 UTC"},
		{"offset input is shown in utc", at("2026-10-01T06:00:00+08:00"), nil, "2026-09-30 22:00 UTC"},
		{"local zone without a name", at("2026-09-30T22:00:00Z"), time.FixedZone("", 8*3600), "2026-09-30 22:00 UTC (06:00 UTC+08:00, next day)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := model.HumanTime(tc.t, tc.loc); got != tc.want {
				t.Errorf("HumanTime(%s, %v) = %q, want %q", model.FormatTime(tc.t), tc.loc, got, tc.want)
			}
		})
	}
}

// TestFormatTimeMilliseconds checks that the JSON form always has three
// fractional digits, where time.RFC3339Nano would trim them.
func TestFormatTimeMilliseconds(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 9, 29, 17, 31, 40, 750e6, time.UTC), "2026-09-29T17:31:40.750Z"},
		{time.Date(2026, 9, 29, 17, 31, 40, 0, time.UTC), "2026-09-29T17:31:40.000Z"},
		{time.Date(2026, 10, 1, 9, 20, 5, 120e6, time.FixedZone("CST", 8*3600)), "2026-10-01T01:20:05.120Z"},
	} {
		if got := model.FormatTime(tc.t); got != tc.want {
			t.Errorf("FormatTime(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

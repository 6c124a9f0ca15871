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

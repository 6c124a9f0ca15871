package model

import (
	"testing"
	"time"
)

// emittedTimes are the shapes handoff's emitters and the systems around
// them write: TimeLayout, whole seconds, nanoseconds, and an offset.
var emittedTimes = []struct{ name, s string }{
	{"ms_utc", "2026-10-01T01:20:05.120Z"},
	{"s_utc", "2026-10-01T01:20:05Z"},
	{"ns_utc", "2026-10-01T01:20:05.123456789Z"},
	{"ms_offset", "2026-10-01T09:20:05.120+08:00"},
}

func BenchmarkParseTimeFast(b *testing.B) {
	for _, tt := range emittedTimes {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := parseTimeFast(tt.s); !ok {
					b.Fatal(tt.s)
				}
			}
		})
	}
}

func BenchmarkTimeParse(b *testing.B) {
	for _, tt := range emittedTimes {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				t, err := time.Parse(time.RFC3339Nano, tt.s)
				if err != nil {
					b.Fatal(err)
				}
				_ = t.UTC().Truncate(time.Millisecond)
			}
		})
	}
}

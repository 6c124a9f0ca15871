package detect_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

func parseSet(t *testing.T, body string) *contract.Set {
	t.Helper()
	c, err := contract.Parse("c.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	set, err := contract.NewSet(c)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// missingDeadline runs a detector over [from, from+2d] with no event at
// all and returns the deadline of batch id's missing finding.
func missingDeadline(t *testing.T, set *contract.Set, from model.Date, id string) (time.Time, bool) {
	t.Helper()
	d := mustNew(t, detect.Config{Contracts: set, From: from})
	start := time.Date(from.Year, from.Month, from.Day, 0, 0, 0, 0, time.UTC).Add(-14 * time.Hour)
	for now := start; now.Before(start.Add(3 * 24 * time.Hour)); now = now.Add(10 * time.Minute) {
		for _, f := range d.Advance(now, now) {
			if f.Kind == detect.Missing && f.State == detect.Open && f.Batch.BatchID == id {
				return f.Deadline, true
			}
		}
	}
	return time.Time{}, false
}

// TestDSTMissingDeadlines: in four zones, on both transitions, the missing
// finding of an hourly batch whose start hour happens twice is due from
// its first occurrence, one whose start hour is skipped from when the
// clock jumps; a daily batch's absolute deadline at such a time follows
// the same rule.
func TestDSTMissingDeadlines(t *testing.T) {
	tests := []struct {
		zone, date string
		hh         int
		hourly     string // UTC deadline of hour hh (start + 20m)
		daily      string // UTC deadline of the day before's "business_date + 1d hh:30"
	}{
		{"Europe/London", "2026-03-29", 1, "2026-03-29T01:20:00Z", "2026-03-29T01:30:00Z"}, // skipped
		{"Europe/London", "2026-10-25", 1, "2026-10-25T00:20:00Z", "2026-10-25T00:30:00Z"}, // twice: BST first
		{"Europe/Berlin", "2026-03-29", 2, "2026-03-29T01:20:00Z", "2026-03-29T01:30:00Z"},
		{"Europe/Berlin", "2026-10-25", 2, "2026-10-25T00:20:00Z", "2026-10-25T00:30:00Z"},
		{"America/New_York", "2026-03-08", 2, "2026-03-08T07:20:00Z", "2026-03-08T07:30:00Z"},
		{"America/New_York", "2026-11-01", 1, "2026-11-01T05:20:00Z", "2026-11-01T05:30:00Z"},
		{"Australia/Sydney", "2026-10-04", 2, "2026-10-03T16:20:00Z", "2026-10-03T16:30:00Z"},
		{"Australia/Sydney", "2026-04-05", 2, "2026-04-04T15:20:00Z", "2026-04-04T15:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.zone+" "+tt.date, func(t *testing.T) {
			if _, err := time.LoadLocation(tt.zone); err != nil {
				t.Skip(err)
			}
			date := model.MustParseDate(tt.date)
			hourly := parseSet(t, fmt.Sprintf("pipeline: p.hourly\nschedule: hourly\ntimezone: %s\nbatch_id: \"{yyyymmdd}{hh}\"\nrequired: [produced, consumed]\ndeadlines:\n  produced: \"start + 20m\"\n", tt.zone))
			got, ok := missingDeadline(t, hourly, date, fmt.Sprintf("%s%02d", date.Compact(), tt.hh))
			if want := at(tt.hourly); !ok || !got.Equal(want) {
				t.Errorf("hourly %02d: missing due %v (found %v), want %v", tt.hh, got, ok, want)
			}
			prev := date.AddDays(-1)
			daily := parseSet(t, fmt.Sprintf("pipeline: p.daily\nschedule: daily\ntimezone: %s\nbatch_id: \"{yyyymmdd}\"\nrequired: [produced, consumed]\ndeadlines:\n  produced: \"business_date + 1d %02d:30\"\n", tt.zone, tt.hh))
			got, ok = missingDeadline(t, daily, prev, prev.Compact())
			if want := at(tt.daily); !ok || !got.Equal(want) {
				t.Errorf("daily, %02d:30 the next day: missing due %v (found %v), want %v", tt.hh, got, ok, want)
			}
		})
	}
}

// TestNoEventDeadlineIsTheContracts: the deadline of a batch with no event
// (or with only job.started) is the contract's first deadline, not the
// default rule's start + 24 h of a later boundary, which used to cap it
// (00:00 Sydney for "business_date + 1d 03:00").
func TestNoEventDeadlineIsTheContracts(t *testing.T) {
	set := parseSet(t, "pipeline: p\nschedule: daily\ntimezone: Australia/Sydney\nbatch_id: \"{yyyymmdd}\"\ndeadlines:\n  produced: \"business_date + 1d 03:00\"\n")
	date := model.MustParseDate("2026-09-30")
	want := at("2026-09-30T17:00:00Z") // 2026-10-01 03:00 AEST (+10)
	got, ok := missingDeadline(t, set, date, "20260930")
	if !ok || !got.Equal(want) {
		t.Errorf("missing due %v (found %v), want %v", got, ok, want)
	}
	tests := []struct {
		name    string
		started string
	}{
		{"job.started early on the date", "2026-09-29T15:00:00Z"}, // 01:00 Sydney: start + 24h would be 01:00 the next day
		{"job.started late on the date", "2026-09-30T12:00:00Z"},
	}
	for _, tt := range tests {
		e := model.Event{Spec: model.SpecV1, ID: "s", Type: model.JobStarted, Time: at(tt.started), Pipeline: "p",
			BusinessDate: date, BatchID: "20260930", System: model.Producer, Component: "c"}
		s := batches.New(set, at("2026-10-02T00:00:00Z"))
		s.Add(&e)
		dg := s.Diagnose(nil)[0]
		if due := dg.Boundaries[model.Produced-1].Due; !due.Equal(want) {
			t.Errorf("%s: produced due %v, want %v", tt.name, due, want)
		}
	}
}

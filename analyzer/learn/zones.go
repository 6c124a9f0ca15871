package learn

import (
	"fmt"
	"time"
)

// DefaultZones are the time zones the learner chooses from unless told
// otherwise, in order of preference on a tie: UTC first, so that a
// once-a-day pipeline whose arrivals fit any fixed offset keeps UTC.
var DefaultZones = []string{
	"UTC", "Europe/London", "Europe/Berlin", "Europe/Moscow", "America/New_York", "America/Chicago",
	"America/Denver", "America/Los_Angeles", "America/Sao_Paulo", "Asia/Kolkata", "Asia/Singapore",
	"Asia/Shanghai", "Asia/Tokyo", "Australia/Sydney", "Pacific/Auckland",
}

// LoadZones loads time zones by name (the zone database, as a contract's
// timezone is loaded).
func LoadZones(names []string) ([]*time.Location, error) {
	var out []*time.Location
	for _, n := range names {
		loc, err := time.LoadLocation(n)
		if err != nil {
			return nil, fmt.Errorf("time zone %q: %w", n, err)
		}
		out = append(out, loc)
	}
	return out, nil
}

// BaselineOptions are the learner's options for baselines, the same
// wherever a diagnosis shows one (`handoff detect`, `diagnose`, `backfill`
// and `serve`), so that they learn the same ones from the same events:
// the default candidate zones.
func BaselineOptions() (Options, error) {
	zones, err := LoadZones(DefaultZones)
	if err != nil {
		return Options{}, fmt.Errorf("baselines: %w", err)
	}
	return Options{Zones: zones}, nil
}

// ExpectedAt is what pipeline's history in l says of its batches as of
// asOf: the baselines in force then (BaselineAsOf, the default window),
// nil when they support none. Annotate writes them into a diagnosis.
func (l *Learner) ExpectedAt(pipeline string, asOf time.Time, o Options) *Expected {
	return l.Expect(BaselineAsOf(asOf), 0, o).Of(pipeline)
}

package main

import (
	"time"

	"github.com/handoff-dev/handoff/internal/cliflag"
)

// checkFormat checks an output format flag (text or json), filling the
// default text.
func checkFormat(format *string) error {
	switch *format {
	case "":
		*format = "text"
	case "text", "json":
	default:
		return usageError("--format %q: want text or json", *format)
	}
	return nil
}

// parseAsOf parses an --as-of flag: an RFC 3339 time, or now when empty.
func parseAsOf(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now, nil
	}
	t, err := cliflag.ParseTime("as-of", s)
	if err != nil {
		return time.Time{}, usageError("%v", err)
	}
	return t, nil
}

// textZones returns the zone text output shows beside UTC for a pipeline:
// the --tz zone when given, else the pipeline's contract's (contracts, a
// --contract path, may be empty: UTC alone).
func textZones(contracts, tz string) (func(pipeline string) *time.Location, error) {
	over, err := cliflag.ParseZone(tz)
	if err != nil {
		return nil, usageError("--tz: %v", err)
	}
	if over != nil {
		return func(string) *time.Location { return over }, nil
	}
	set, err := loadContracts(contracts)
	if err != nil {
		return nil, err
	}
	return set.Zone, nil
}

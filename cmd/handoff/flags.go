package main

import (
	"time"
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
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usageError("--as-of %q: want an RFC 3339 time such as 2026-10-03T00:00:00Z", s)
	}
	return t, nil
}

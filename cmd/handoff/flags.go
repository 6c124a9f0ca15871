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

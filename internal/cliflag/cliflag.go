// Package cliflag holds the flag.Value types the commands share.
package cliflag

import (
	"fmt"
	"strings"
	"time"
)

// List is a comma-separated list flag ("a:1,b:2"), such as Kafka brokers.
// Blanks around items and empty items are dropped.
type List struct{ P *[]string }

// String returns the list joined by commas.
func (l List) String() string {
	if l.P == nil {
		return ""
	}
	return strings.Join(*l.P, ",")
}

// Set replaces the list with the items of s.
func (l List) Set(s string) error {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	*l.P = out
	return nil
}

// Secret is a flag holding a password or a signing key. Its String is
// empty whatever it holds, so the flag package never prints the value: not
// in -h's "(default ...)", not in the usage printed on a mistyped flag
// (which a unit file's typo would put in the journal). The value usually
// comes from the environment, where it stays out of the process list.
type Secret struct{ P *string }

// String returns nothing: a secret is never printed.
func (Secret) String() string { return "" }

// Set stores s.
func (s Secret) Set(v string) error {
	*s.P = v
	return nil
}

// Earliest and Latest bound the times a command accepts in a flag (--as-of,
// --now): no delivery happens before the Unix epoch, and beyond a couple of
// centuries time arithmetic against the wall clock overflows (a duration
// holds ±292 years: --now 0001-01-01 once became 1734).
var (
	Earliest = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	Latest   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// ParseTime parses the value of the time flag name: RFC 3339, from
// Earliest up to (not including) Latest. The error names the flag, the
// value and what to give instead.
func ParseTime(name, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-10-03T00:00:00Z", name, s)
	}
	if t.Before(Earliest) || !t.Before(Latest) {
		return time.Time{}, fmt.Errorf("--%s %q: out of range, want a time from %s to before %s", name, s,
			Earliest.Format(time.RFC3339), Latest.Format(time.RFC3339))
	}
	return t, nil
}

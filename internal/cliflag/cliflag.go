// Package cliflag holds what the commands share about flags: the
// flag.Value types, the Kafka settings every Kafka client takes (one set
// of variables, one set of flags, brokers trimmed one way), and the
// deprecated spellings a renamed flag keeps for one release.
package cliflag

import (
	"flag"
	"fmt"
	"io"
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
	*l.P = SplitList(s)
	return nil
}

// SplitList splits a comma-separated list, dropping blanks around items
// and empty items.
func SplitList(s string) []string {
	return TrimList(strings.Split(s, ","))
}

// TrimList returns the items of l with blanks around them trimmed and the
// empty ones dropped (a list read from the environment, "a, b,").
func TrimList(l []string) []string {
	var out []string
	for _, x := range l {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// Deprecated defines old on fs as a deprecated spelling of the flag new
// (already defined on fs): setting it sets new and says on warn that old
// goes away and which flag to use.
func Deprecated(fs *flag.FlagSet, old, new string, warn io.Writer) {
	f := fs.Lookup(new)
	if f == nil {
		panic("cliflag.Deprecated: flag --" + new + " is not defined")
	}
	fs.Var(&deprecated{to: f, old: old, warn: warn}, old, "deprecated spelling of --"+new+", accepted for one release")
}

type deprecated struct {
	to   *flag.Flag
	old  string
	warn io.Writer
}

func (d *deprecated) String() string {
	if d == nil || d.to == nil {
		return ""
	}
	return d.to.Value.String()
}

func (d *deprecated) Set(v string) error {
	if d.warn != nil {
		fmt.Fprintf(d.warn, "handoff: --%s is deprecated and goes away in the next release: use --%s\n", d.old, d.to.Name)
	}
	return d.to.Value.Set(v)
}

// IsBoolFlag lets a deprecated spelling of a boolean flag stand alone.
func (d *deprecated) IsBoolFlag() bool {
	b, ok := d.to.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Given reports whether any of names was set on the command line.
func Given(fs *flag.FlagSet, names ...string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				given = true
			}
		}
	})
	return given
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

// Items returns the items of a repeatable flag whose values may also be
// comma lists, spaces around items trimmed. An empty item stays, for the
// caller's check to refuse by name.
func Items(l []string) []string {
	var out []string
	for _, v := range l {
		for _, item := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(item))
		}
	}
	return out
}

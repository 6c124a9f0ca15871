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

// Package cliflag holds the flag.Value types the commands share.
package cliflag

import "strings"

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

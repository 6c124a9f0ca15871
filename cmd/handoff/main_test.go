package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestEveryCommandHelpAndStrayArguments checks the flag handling all
// commands share: -h is success, a bad flag or a stray argument is a usage
// error (exit 2), and none of them starts any work.
func TestEveryCommandHelpAndStrayArguments(t *testing.T) {
	for _, c := range commands() {
		for _, tt := range []struct {
			args []string
			code int
			say  string
		}{
			{[]string{"-h"}, exitOK, "-"},
			{[]string{"--no-such-flag"}, exitUsage, "no-such-flag"},
			{[]string{"stray"}, exitUsage, "unexpected arguments: stray"},
		} {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{c.name}, tt.args...), strings.NewReader(""), &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.say) {
				t.Errorf("handoff %s %v: exit %d, want %d; stderr %q should mention %q", c.name, tt.args, code, tt.code, errb.String(), tt.say)
			}
		}
	}
}

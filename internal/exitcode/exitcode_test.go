package exitcode_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/handoff-dev/handoff/internal/exitcode"
)

// TestOf: the exit code and the message of an error, through wrapping.
func TestOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		code int
		msg  string
	}{
		{"nil", nil, exitcode.OK, ""},
		{"plain", errors.New("disk full"), exitcode.Failure, "disk full"},
		{"usage", exitcode.Usagef("--pipeline %s: no batch event", "nope"), exitcode.Usage, "--pipeline nope: no batch event"},
		{"wrapped usage", fmt.Errorf("reading: %w", exitcode.Usagef("bad line")), exitcode.Usage, "reading: bad line"},
		{"silent", exitcode.Silent(exitcode.NotDelivered), exitcode.NotDelivered, ""},
	} {
		code, msg := exitcode.Of(tt.err)
		got := ""
		if msg != nil {
			got = msg.Error()
		}
		if code != tt.code || got != tt.msg {
			t.Errorf("%s: %d %q, want %d %q", tt.name, code, got, tt.code, tt.msg)
		}
	}
}

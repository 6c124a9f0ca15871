package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestServeUsageErrors: bad settings are usage errors (exit 2) that name
// the flag, found before any connection is made.
func TestServeUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--query-timeout", "0s"}, "--query-timeout"},
		{[]string{"--clickhouse-database", "handoff; DROP TABLE x"}, "--clickhouse-database"},
		{[]string{"--contract", "/no/such/contracts"}, "--contract"},
		{[]string{"stray"}, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		// An address nothing listens on: reaching it would fail with exit 3.
		args := append([]string{"serve", "--clickhouse-addr", "127.0.0.1:1"}, tt.args...)
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tt.says) {
			t.Errorf("handoff %v: exit %d, stderr %q; want exit 2 naming %s", args, code, errb.String(), tt.says)
		}
	}
}

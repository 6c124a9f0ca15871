package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/schema"
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

// TestServeWaitsForDatabase: with --wait-for-database, serve on a database
// without handoff's tables says it waits, starts serving once handoff
// ingest's schema appears, and answers /healthz 200 in JSON; then stops
// cleanly when interrupted.
func TestServeWaitsForDatabase(t *testing.T) {
	clearEnv(t)
	addr := testenv.ClickHouseAddr(t)
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "serve_wait")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--clickhouse-addr", addr, "--clickhouse-database", db, "--wait-for-database"},
			strings.NewReader(""), io.Discard, pw)
		pw.Close()
		done <- code
	}()
	lines := bufio.NewScanner(pr)
	next := func(want string) string {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return lines.Text()
			}
		}
		t.Fatalf("serve's log ended before a line with %q", want)
		return ""
	}
	next("waiting for the database")
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`url=(\S+)`).FindStringSubmatch(next("serving"))
	if url == nil {
		t.Fatal("the serving line names no url")
	}
	go io.Copy(io.Discard, pr) // the rest of the log
	res, err := http.Get(url[1] + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") || !strings.Contains(string(body), `"status": "ok"`) {
		t.Errorf("/healthz: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("serve interrupted: exit %d, want 0", code)
	}
}

// Package testenv gives integration tests the addresses of the real Kafka
// broker and ClickHouse server (from HANDOFF_KAFKA_BROKERS and
// HANDOFF_CLICKHOUSE_ADDR) and unique names, so tests can run repeatedly
// against shared services. A missing service fails the test with the way
// to start it; it never skips.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/store/chconn"
)

const howTo = "run `make test`, or `bash deploy/services/up.sh && . .data/services.env` and then go test"

// Integration marks t as an integration test: under go test -short (make
// unit) it is skipped, saying why; otherwise it runs and needs the real
// services. This is the only skip the project allows: a unit run asked
// for it; a full run never skips for a missing service, it fails.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (real ClickHouse/Kafka): skipped by -short; run make test")
	}
}

// ClickHouseAddr returns HANDOFF_CLICKHOUSE_ADDR or fails the test.
func ClickHouseAddr(t testing.TB) string {
	t.Helper()
	Integration(t)
	a := strings.TrimSpace(os.Getenv("HANDOFF_CLICKHOUSE_ADDR"))
	if a == "" {
		t.Fatalf("HANDOFF_CLICKHOUSE_ADDR is not set: this test needs a real ClickHouse; %s", howTo)
	}
	return a
}

// KafkaBrokers returns HANDOFF_KAFKA_BROKERS or fails the test.
func KafkaBrokers(t testing.TB) []string {
	t.Helper()
	Integration(t)
	b := strings.TrimSpace(os.Getenv("HANDOFF_KAFKA_BROKERS"))
	if b == "" {
		t.Fatalf("HANDOFF_KAFKA_BROKERS is not set: this test needs a real Kafka broker; %s", howTo)
	}
	var out []string
	for _, s := range strings.Split(b, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ClickHouse opens a connection to the test server, closed at cleanup.
func ClickHouse(t testing.TB) driver.Conn {
	t.Helper()
	addr := ClickHouseAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := chconn.Open(ctx, chconn.Config{Addr: addr})
	if err != nil {
		t.Fatalf("%v; %s", err, howTo)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Name returns prefix plus a random suffix, usable as a database, topic or
// group name ([a-z0-9_]).
func Name(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Database returns a unique database name and drops the database at
// cleanup unless HANDOFF_TEST_KEEP is set.
func Database(t testing.TB, conn driver.Conn, prefix string) string {
	t.Helper()
	db := Name(prefix)
	t.Cleanup(func() {
		if os.Getenv("HANDOFF_TEST_KEEP") != "" {
			t.Logf("keeping ClickHouse database %s (HANDOFF_TEST_KEEP)", db)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Logf("drop test database %s: %v", db, err)
		}
	})
	return db
}

// Eventually polls cond every interval until it returns true or the
// deadline passes, then fails the test with what cond last said.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, msg := cond()
		last = msg
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Package storetest gives a test a fresh database on the test ClickHouse
// with handoff's schema ensured, and the sink that ingest stores rows
// with, so that a fixture is loaded the way handoff ingest loads it and is
// dropped when the test ends.
//
// It is test support and nothing else: only _test.go files import it
// (deploy/check-imports.sh), which is why it may import store/writer,
// as tests may. The server is found, and the database named and dropped,
// by internal/testenv (ClickHouse, Database).
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// DB is a fresh database of the test server with the schema in it.
type DB struct {
	// Conn is a connection of its own to the test server, closed at
	// cleanup.
	Conn driver.Conn
	// Name is the database: prefix and a random suffix, dropped at
	// cleanup unless HANDOFF_TEST_KEEP is set.
	Name string
	// Sink writes into the database, as handoff ingest does.
	Sink *writer.Sink
}

// NewDB makes a database named after prefix on the test server and
// ensures the schema in it (schema.Ensure, a single server), failing tb
// with what went wrong. Cleanup drops the database, then closes the
// connection.
func NewDB(tb testing.TB, prefix string) *DB {
	tb.Helper()
	conn := testenv.ClickHouse(tb)
	db := testenv.Database(tb, conn, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := schema.Ensure(ctx, conn, db); err != nil {
		tb.Fatalf("ensure the schema in test database %s: %v", db, err)
	}
	sink, err := writer.New(conn, db)
	if err != nil {
		tb.Fatalf("sink into test database %s: %v", db, err)
	}
	return &DB{Conn: conn, Name: db, Sink: sink}
}

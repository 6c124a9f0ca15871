package schema_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/schema"
)

// ddlColumns parses the CREATE TABLE of table out of the schema's
// statements: its stored columns (MATERIALIZED ones are computed, never
// inserted), Nested ones as their sub-columns, in order.
func ddlColumns(t *testing.T, table string) []string {
	t.Helper()
	stmts, err := schema.Statements("db")
	if err != nil {
		t.Fatal(err)
	}
	head := "CREATE TABLE IF NOT EXISTS db." + table + " ("
	for _, s := range stmts {
		if !strings.HasPrefix(s, head) {
			continue
		}
		body := s[len(head):strings.Index(s, ") ENGINE")]
		var out []string
		nested := regexp.MustCompile(`^(\w+)\s+Nested\((.*)\)$`)
		for _, line := range strings.Split(body, "\n") {
			line = strings.TrimSuffix(strings.TrimSpace(line), ",")
			if line == "" || strings.Contains(line, " MATERIALIZED ") {
				continue
			}
			if m := nested.FindStringSubmatch(line); m != nil {
				for _, sub := range strings.Split(m[2], ",") {
					out = append(out, m[1]+"."+strings.Fields(sub)[0])
				}
				continue
			}
			out = append(out, strings.Fields(line)[0])
		}
		return out
	}
	t.Fatalf("no CREATE TABLE of %s in schema.sql", table)
	return nil
}

// TestColumnsMatchDDL: every INSERT column list is exactly the table's
// stored columns in DDL order, and the events read list is its prefix.
func TestColumnsMatchDDL(t *testing.T) {
	for _, table := range []string{schema.Events, schema.DeadLetters, schema.Diagnoses, schema.Findings} {
		want := ddlColumns(t, table)
		if got := schema.InsertColumns(table); !slices.Equal(got, want) {
			t.Errorf("%s: column list\n  %v\nDDL stores\n  %v", table, got, want)
		}
	}
	read := schema.SplitColumns(schema.EventReadColumns)
	if ins := schema.InsertColumns(schema.Events); len(read) > len(ins) || !slices.Equal(ins[:len(read)], read) {
		t.Errorf("EventReadColumns %v is not a prefix of EventColumns %v", read, ins)
	}
	if schema.InsertColumns("nope") != nil {
		t.Error("InsertColumns of an unknown table is not nil")
	}
}

// TestColumnsMatchServer: the same lists against what the real server made
// of the DDL (system.columns, in definition order; 18.16 has no position
// column), materialized columns excluded.
func TestColumnsMatchServer(t *testing.T) {
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "schema_cols")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{schema.Events, schema.DeadLetters, schema.Diagnoses, schema.Findings} {
		if got, want := storedColumns(t, ctx, conn, db, table), schema.InsertColumns(table); !slices.Equal(got, want) {
			t.Errorf("%s on the server:\n  %v\ncolumn list:\n  %v", table, got, want)
		}
	}
}

// storedColumns returns the columns of db.table on the server that an
// INSERT names (materialized ones excluded), in definition order.
func storedColumns(t *testing.T, ctx context.Context, conn driver.Conn, db, table string) []string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT name FROM system.columns WHERE database = ? AND table = ? AND default_kind != 'MATERIALIZED'", db, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	return got
}

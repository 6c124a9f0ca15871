package schema_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/schema"
)

// byDateRows is what events_by_date holds: (business date, pipeline,
// batch id, event id) of every row, copies included, in its sort order.
func byDateRows(t *testing.T, ctx context.Context, q func(string) [][]string, db string) []string {
	t.Helper()
	var out []string
	for _, r := range q("SELECT toString(business_date), pipeline, batch_id, event_id FROM " + db + ".events_by_date ORDER BY business_date, pipeline, batch_id, event_id") {
		out = append(out, strings.Join(r, " "))
	}
	return out
}

// TestEventsByDate: a database made by a release without the copy gets
// its stored batch events copied once when Ensure creates the view; later
// inserts into events reach the copy through the view; heartbeats never
// do; and a second Ensure copies nothing again.
func TestEventsByDate(t *testing.T) {
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "bydate")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stmts, err := schema.Statements(db)
	if err != nil {
		t.Fatal(err)
	}
	// The previous release's events table, with history in it.
	for _, s := range stmts[:2] {
		if err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(rows ...[4]string) {
		t.Helper()
		b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".events (pipeline, business_date, batch_id, event_id, type, time_ms)")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			d, _ := time.Parse(time.DateOnly, r[1])
			typ := "job.started"
			if r[2] == "" {
				typ = "process.heartbeat"
			}
			if err := b.Append(r[0], d, r[2], r[3], typ, int64(1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Send(); err != nil {
			t.Fatal(err)
		}
	}
	insert([4]string{"b.p", "2026-09-30", "20260930", "e1"}, [4]string{"a.p", "2026-09-30", "20260930", "e2"}, [4]string{"a.p", "1970-01-01", "", "hb1"})
	q := func(sql string) [][]string {
		t.Helper()
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out [][]string
		for rows.Next() {
			var a, b, c, d string
			if err := rows.Scan(&a, &b, &c, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, []string{a, b, c, d})
		}
		return out
	}
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-09-30 a.p 20260930 e2", "2026-09-30 b.p 20260930 e1"}
	if got := byDateRows(t, ctx, q, db); !slices.Equal(got, want) {
		t.Errorf("after Ensure on a database with history: events_by_date holds %q, want %q", got, want)
	}
	insert([4]string{"a.p", "2026-09-29", "20260929", "e3"}, [4]string{"a.p", "1970-01-01", "", "hb2"})
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	want = append([]string{"2026-09-29 a.p 20260929 e3"}, want...)
	if got := byDateRows(t, ctx, q, db); !slices.Equal(got, want) {
		t.Errorf("after an insert and a second Ensure: events_by_date holds %q, want %q (each row once)", got, want)
	}

	// A first copy cut short (the process killed mid-INSERT): the view
	// exists, part of the history is missing and the mark is not there.
	// The next Ensure copies again and marks it done.
	for _, s := range []string{"ALTER TABLE " + db + ".events_by_date DROP PARTITION 202609", "DROP TABLE " + db + ".events_by_date_copied"} {
		if err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	if got := byDateRows(t, ctx, q, db); !slices.Equal(got, want) {
		t.Errorf("after a copy cut short and another Ensure: events_by_date holds %q, want %q", got, want)
	}
	var marked uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", db, schema.EventsByDateCopied).Scan(&marked); err != nil {
		t.Fatal(err)
	}
	if marked != 1 {
		t.Errorf("after the copy: %s.%s missing, so readers keep away from events_by_date", db, schema.EventsByDateCopied)
	}
}

// TestEventsByDateCurrentClickHouse: the table and its view on a current
// ClickHouse (chdb-core): an insert into events reaches the copy, without
// its heartbeat.
func TestEventsByDateCurrentClickHouse(t *testing.T) {
	const db = "handoff_chdb"
	stmts, err := schema.Statements(db)
	if err != nil {
		t.Fatal(err)
	}
	stmts = append(stmts, "INSERT INTO "+db+".events (pipeline, business_date, batch_id, event_id, type, time_ms) VALUES "+
		"('b.p', '2026-09-30', '20260930', 'e1', 'job.started', 1), ('a.p', '1970-01-01', '', 'hb', 'process.heartbeat', 1)")
	res := testenv.RunCHDB(t, stmts, []testenv.CHDBQuery{
		{Name: "copy", SQL: "SELECT toString(business_date), pipeline, batch_id, event_id, type FROM " + db + ".events_by_date ORDER BY business_date, pipeline"},
	})
	if res[0].Error != "" {
		t.Fatalf("on chdb: %s", res[0].Error)
	}
	if want := [][]string{{"2026-09-30", "b.p", "20260930", "e1", "job.started"}}; !slices.EqualFunc(res[0].Rows, want, slices.Equal) {
		t.Errorf("events_by_date on chdb: %q, want %q", res[0].Rows, want)
	}
}

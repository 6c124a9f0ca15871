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

// earlierEvents is the events table of the releases that stored its
// derived columns (MATERIALIZED): schema.sql's with ALIAS written back.
func earlierEvents(t *testing.T, db string) string {
	stmts, err := schema.Statements(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if strings.HasPrefix(s, "CREATE TABLE IF NOT EXISTS "+db+".events (") {
			return strings.ReplaceAll(s, " ALIAS ", " MATERIALIZED ")
		}
	}
	t.Fatal("schema.sql has no CREATE TABLE of events")
	return ""
}

// The statement that turns an earlier release's derived columns of events
// into ALIAS.
const modifyDerived = "ALTER TABLE h.events MODIFY COLUMN time DateTime ALIAS toDateTime(intDiv(time_ms, 1000)), " +
	"MODIFY COLUMN event_date Date ALIAS toDate(toDateTime(intDiv(time_ms, 1000))), " +
	"MODIFY COLUMN ingested DateTime ALIAS toDateTime(intDiv(ingested_ms, 1000))"

// TestUpgradeDerivedToAlias: events' time, event_date and ingested are
// modified to ALIAS where the server has them MATERIALIZED, left alone
// where they are ALIAS already, and the Distributed table of the cluster
// flavour (ALIAS from the start) is not altered.
func TestUpgradeDerivedToAlias(t *testing.T) {
	stored := strings.Split(schema.EventColumns, ", ")
	for i, c := range stored {
		stored[i] = strings.Trim(c, "`")
	}
	with := func(kind string) []string {
		return append(slices.Clone(stored), "time "+kind, "event_date "+kind, "ingested "+kind)
	}
	for _, tt := range []struct {
		name   string
		layout schema.Layout
		have   map[string][]string
		want   []string
	}{
		{"earlier release", schema.Layout{}, map[string][]string{schema.Events: with("MATERIALIZED")}, []string{modifyDerived}},
		{"up to date", schema.Layout{}, map[string][]string{schema.Events: with("ALIAS")}, nil},
		{"cluster", schema.Layout{Cluster: "c1"},
			map[string][]string{schema.Events + schema.LocalSuffix: with("MATERIALIZED"), schema.Events: with("ALIAS")},
			[]string{strings.Replace(modifyDerived, "h.events", "h.events_local ON CLUSTER c1", 1)}},
	} {
		got, err := schema.UpgradeStatements("h", tt.layout, tt.have)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// TestEnsureDerivedToAlias: on the server, Ensure turns an earlier events
// table's MATERIALIZED columns into ALIAS, and the rows stored before read
// the same derived values.
func TestEnsureDerivedToAlias(t *testing.T) {
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "schema_alias")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range []string{"CREATE DATABASE " + db, earlierEvents(t, db)} {
		if err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".events (pipeline, business_date, batch_id, event_id, time_ms, ingested_ms)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append("p", time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC), "b", "e1", int64(1790000000123), int64(1790000100999)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT name, default_kind FROM system.columns WHERE database = ? AND table = 'events' AND name IN ('time', 'event_date', 'ingested') ORDER BY name", db)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for rows.Next() {
		var n, k string
		if err := rows.Scan(&n, &k); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, n+" "+k)
	}
	rows.Close()
	if want := []string{"event_date ALIAS", "ingested ALIAS", "time ALIAS"}; !slices.Equal(kinds, want) {
		t.Errorf("derived columns after Ensure: %q, want %q", kinds, want)
	}
	var tm, ing time.Time
	var d time.Time
	if err := conn.QueryRow(ctx, "SELECT time, event_date, ingested FROM "+db+".events WHERE event_id = 'e1'").Scan(&tm, &d, &ing); err != nil {
		t.Fatal(err)
	}
	if tm.Unix() != 1790000000 || ing.Unix() != 1790000100 || d.Format("2006-01-02") != time.Unix(1790000000, 0).UTC().Format("2006-01-02") {
		t.Errorf("stored row reads time %v, event_date %v, ingested %v", tm, d, ing)
	}
	// A second Ensure has nothing left to change.
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
}

// TestDerivedToAliasCurrentClickHouse: the same ALTER on a current
// ClickHouse (chdb-core) keeps the stored row's derived values.
func TestDerivedToAliasCurrentClickHouse(t *testing.T) {
	const db = "h"
	res := testenv.RunCHDB(t, []string{"CREATE DATABASE " + db, earlierEvents(t, db),
		"INSERT INTO h.events (pipeline, business_date, batch_id, event_id, time_ms, ingested_ms) VALUES ('p', '2026-09-30', 'b', 'e1', 1790000000123, 1790000100999)",
		modifyDerived,
	}, []testenv.CHDBQuery{
		{Name: "kinds", SQL: "SELECT name, default_kind FROM system.columns WHERE database = 'h' AND table = 'events' AND name IN ('time', 'event_date', 'ingested') ORDER BY name"},
		{Name: "values", SQL: "SELECT toUnixTimestamp(time), toString(event_date), toUnixTimestamp(ingested) FROM h.events"},
	})
	for _, r := range res {
		if r.Error != "" {
			t.Fatalf("%s on chdb: %s", r.Name, r.Error)
		}
	}
	if want := [][]string{{"event_date", "ALIAS"}, {"ingested", "ALIAS"}, {"time", "ALIAS"}}; !slices.EqualFunc(res[0].Rows, want, slices.Equal) {
		t.Errorf("kinds on chdb: %q, want %q", res[0].Rows, want)
	}
	if want := [][]string{{"1790000000", time.Unix(1790000000, 0).UTC().Format("2006-01-02"), "1790000100"}}; !slices.EqualFunc(res[1].Rows, want, slices.Equal) {
		t.Errorf("values on chdb: %q, want %q", res[1].Rows, want)
	}
}

package schema_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// addedToFindings are the columns findings_v2 gained after its first
// release: a findings_v2 made before has every other column.
var addedToFindings = []string{"reporting_delay_ms", "resolution", "superseded_by", "root", "events_partition", "events_partitions"}

// previousFindings returns the CREATE TABLE of findings_v2 in database db
// as the earlier release made it (schema.sql's, less addedToFindings),
// and its INSERT column list.
func previousFindings(t *testing.T, db string) (ddl string, columns []string) {
	t.Helper()
	stmts, err := schema.Statements(db)
	if err != nil {
		t.Fatal(err)
	}
	s := find(t, stmts, db+"."+schema.Findings+" ")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 0 && slices.Contains(addedToFindings, f[0]) {
			continue
		}
		if strings.HasPrefix(l, ")") && len(lines) > 0 {
			// the columns added last were the table's last
			lines[len(lines)-1] = strings.TrimSuffix(lines[len(lines)-1], ",")
		}
		lines = append(lines, l)
	}
	for _, c := range schema.InsertColumns(schema.Findings) {
		if !slices.Contains(addedToFindings, c) {
			columns = append(columns, c)
		}
	}
	return strings.Join(lines, "\n"), columns
}

// oneRow is a findings_v2 row as columns (FindingRows.Columns), resolved
// as row says, restricted to the named columns.
func oneRow(row schema.FindingRow, offset int64, only []string) []any {
	var rows schema.FindingRows
	rows.Add(row, schema.Source{Topic: "handoff.findings", Offset: offset}, 1)
	var out []any
	for i, c := range schema.InsertColumns(schema.Findings) {
		if slices.Contains(only, c) {
			out = append(out, rows.Columns()[i])
		}
	}
	return out
}

func upgradeRows() (old, added schema.FindingRow) {
	k := model.BatchKey{Pipeline: "p", BusinessDate: model.MustParseDate("2026-09-19"), BatchID: "20260919"}
	old = schema.FindingRow{Key: k, Fingerprint: "f1", Seq: 2, State: "resolved", Kind: "overdue", Name: "consumed", Diagnosis: "{}"}
	added = old
	added.Fingerprint, added.Kind, added.Name = "f2", "failed", "produced"
	added.ReportingDelayMS, added.Resolution, added.SupersededBy = 180_000, "superseded by p/2026-09-19/20260919-r2", "p/2026-09-19/20260919-r2"
	return old, added
}

// TestEnsureAddsFindingColumns: a findings_v2 made by the earlier release,
// holding a row, gets the new columns from Ensure (two processes at once,
// then again), in the order a new table has them; the old row reads
// their defaults and a row of this release stores them.
func TestEnsureAddsFindingColumns(t *testing.T) {
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "schema_addcols")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ddl, prev := previousFindings(t, db)
	old, added := upgradeRows()
	for _, q := range []string{"CREATE DATABASE " + db, ddl} {
		if err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
	}
	sink, err := writer.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.InsertColumns(ctx, schema.Findings, strings.Join(quote(prev), ", "), oneRow(old, 1, prev)); err != nil {
		t.Fatalf("a row of the earlier release: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = schema.Ensure(ctx, conn, db) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Ensure %d of two at once: %v", i+1, err)
		}
	}
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatalf("Ensure on the upgraded table: %v", err)
	}
	if got, want := storedColumns(t, ctx, conn, db, schema.Findings), schema.InsertColumns(schema.Findings); !slices.Equal(got, want) {
		t.Errorf("upgraded findings_v2 columns:\n  %v\nwant those of a new one:\n  %v", got, want)
	}
	all := schema.InsertColumns(schema.Findings)
	if err := sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, oneRow(added, 2, all)); err != nil {
		t.Fatalf("a row of this release: %v", err)
	}
	for _, want := range []schema.FindingRow{old, added} {
		var (
			delay      int64
			res, super string
		)
		if err := conn.QueryRow(ctx, "SELECT reporting_delay_ms, resolution, superseded_by FROM "+db+"."+schema.Findings+" WHERE fingerprint = ?",
			want.Fingerprint).Scan(&delay, &res, &super); err != nil {
			t.Fatal(err)
		}
		if delay != want.ReportingDelayMS || res != want.Resolution || super != want.SupersededBy {
			t.Errorf("%s: read %d %q %q, want %d %q %q", want.Fingerprint, delay, res, super, want.ReportingDelayMS, want.Resolution, want.SupersededBy)
		}
	}
}

// TestAddFindingColumnsCurrentClickHouse: the same upgrade's statements on
// a current ClickHouse (chdb-core).
func TestAddFindingColumnsCurrentClickHouse(t *testing.T) {
	const db = "handoff_chdb"
	ddl, prev := previousFindings(t, db)
	have := append(slices.Clone(prev), "raised")
	alters, err := schema.UpgradeStatements(db, schema.Layout{}, map[string][]string{schema.Findings: have})
	if err != nil {
		t.Fatal(err)
	}
	if len(alters) != 1 {
		t.Fatalf("upgrade statements %q, want one ALTER of findings_v2", alters)
	}
	old, added := upgradeRows()
	stmts := append([]string{"CREATE DATABASE " + db, ddl,
		testenv.InsertSQL(db, schema.Findings, strings.Join(quote(prev), ", "), oneRow(old, 1, prev))}, alters...)
	stmts = append(stmts, testenv.InsertSQL(db, schema.Findings, schema.FindingColumns, oneRow(added, 2, schema.InsertColumns(schema.Findings))))
	res := testenv.RunCHDB(t, stmts, []testenv.CHDBQuery{
		{Name: "columns", SQL: "SELECT name FROM system.columns WHERE database = '" + db + "' AND table = 'findings_v2' AND default_kind != 'MATERIALIZED' ORDER BY position"},
		{Name: "values", SQL: "SELECT fingerprint, reporting_delay_ms, resolution, superseded_by FROM " + db + ".findings_v2 ORDER BY fingerprint"},
	})
	for _, r := range res {
		if r.Error != "" {
			t.Fatalf("%s on chdb: %s", r.Name, r.Error)
		}
	}
	var got []string
	for _, row := range res[0].Rows {
		got = append(got, row[0])
	}
	if want := schema.InsertColumns(schema.Findings); !slices.Equal(got, want) {
		t.Errorf("upgraded findings_v2 columns on chdb:\n  %v\nwant:\n  %v", got, want)
	}
	want := [][]string{{"f1", "0", "", ""}, {"f2", "180000", added.Resolution, added.SupersededBy}}
	if !slices.EqualFunc(res[1].Rows, want, slices.Equal) {
		t.Errorf("rows on chdb: %q, want %q", res[1].Rows, want)
	}
}

// TestUpgradeStatements: what an upgrade sends, by what the server has.
func TestUpgradeStatements(t *testing.T) {
	_, prev := previousFindings(t, "h")
	have := append(slices.Clone(prev), "raised")
	full := append(schema.InsertColumns(schema.Findings), "raised")
	noRaised := schema.InsertColumns(schema.Findings)
	const adds = "ADD COLUMN reporting_delay_ms Int64 DEFAULT 0 AFTER lateness_ms, ADD COLUMN resolution String DEFAULT '' AFTER reporting_delay_ms, " +
		"ADD COLUMN superseded_by String DEFAULT '' AFTER resolution, ADD COLUMN root String DEFAULT '' AFTER owner, " +
		"ADD COLUMN events_partition Int32 DEFAULT 0 AFTER kafka_offset, ADD COLUMN events_partitions Int32 DEFAULT 0 AFTER events_partition"
	for _, tt := range []struct {
		name   string
		layout schema.Layout
		have   map[string][]string
		want   []string
	}{
		{"earlier release", schema.Layout{}, map[string][]string{schema.Findings: have},
			[]string{"ALTER TABLE h.findings_v2 " + adds}},
		{"up to date", schema.Layout{}, map[string][]string{schema.Findings: full}, nil},
		{"no table yet: CREATE makes it", schema.Layout{}, map[string][]string{}, nil},
		{"a materialized column", schema.Layout{}, map[string][]string{schema.Findings: noRaised},
			[]string{"ALTER TABLE h.findings_v2 ADD COLUMN raised DateTime MATERIALIZED toDateTime(intDiv(raised_ms, 1000)) AFTER raised_ms"}},
		{"cluster", schema.Layout{Cluster: "c1"}, map[string][]string{schema.Findings + schema.LocalSuffix: have, schema.Findings: have},
			[]string{"ALTER TABLE h.findings_v2_local ON CLUSTER c1 " + adds, "ALTER TABLE h.findings_v2 ON CLUSTER c1 " + adds}},
		{"cluster, Distributed takes ALIAS", schema.Layout{Cluster: "c1"}, map[string][]string{schema.Findings + schema.LocalSuffix: full, schema.Findings: noRaised},
			[]string{"ALTER TABLE h.findings_v2 ON CLUSTER c1 ADD COLUMN raised DateTime ALIAS toDateTime(intDiv(raised_ms, 1000)) AFTER raised_ms"}},
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

// quote backquotes column names (the Nested sub-columns need it).
func quote(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = "`" + c + "`"
	}
	return out
}

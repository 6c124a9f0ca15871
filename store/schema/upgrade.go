package schema

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Upgrading a table in place. CREATE TABLE IF NOT EXISTS leaves an
// existing table as it is, so a column added to schema.sql after a table
// was first created (findings_v2's reporting_delay_ms, resolution and
// superseded_by) would be missing from a database made by an earlier
// release, and every INSERT naming it would fail. Ensure therefore
// compares each table's columns on the server with schema.sql and adds
// the missing ones with ALTER TABLE ... ADD COLUMN ... AFTER the column
// before it, so an upgraded table has the columns of a new one in the same
// order. 18.16 has no ADD COLUMN IF NOT EXISTS: the check is ours, and a
// second process adding the same column at the same time is told apart
// from a real failure by reading the columns again. An added column
// needs a DEFAULT (or MATERIALIZED) that rows stored before it read as.
// Nothing is ever dropped or changed.

// ddlColumn is one column definition of a CREATE TABLE of schema.sql.
type ddlColumn struct {
	name string // as defined: a Nested column's own name (labels)
	def  string // the whole definition, "name Type ..."
}

// ddlTables returns the columns of every CREATE TABLE of schema.sql, by
// table, in definition order.
func ddlTables() (map[string][]ddlColumn, error) {
	out := map[string][]ddlColumn{}
	for _, s := range tableStatements() {
		if strings.HasPrefix(s, "CREATE DATABASE") {
			continue
		}
		m := createTable.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("schema.sql: statement %.40q... is not a CREATE TABLE ... ENGINE = *MergeTree(...) whose columns Ensure can upgrade", s)
		}
		var cols []ddlColumn
		for _, line := range strings.Split(m[2], "\n") {
			def := strings.TrimSuffix(strings.TrimSpace(line), ",")
			if def == "" {
				continue
			}
			name := strings.Fields(def)[0]
			// schema.sql aligns its types: one space after the name here.
			cols = append(cols, ddlColumn{name: name, def: name + " " + strings.TrimSpace(def[len(name):])})
		}
		out[m[1]] = cols
	}
	return out, nil
}

// serverColumns is what the server has: the column names of each table of
// one database (a Nested column as its sub-columns, labels.key ...).
type serverColumns map[string]map[string]bool

// has reports whether table holds column c (for a Nested column, any of
// its sub-columns).
func (sc serverColumns) has(table, c string) bool {
	cols := sc[table]
	if cols[c] {
		return true
	}
	for n := range cols {
		if strings.HasPrefix(n, c+".") {
			return true
		}
	}
	return false
}

// HasColumn reports whether table of database db has column c (or, for a
// Nested column, its subcolumns), as the server says now. A reader of a
// database that an ingester of an earlier release made asks it before it
// reads a column added since: Ensure adds it when an ingester of this
// release starts, and readers never alter the schema.
func HasColumn(ctx context.Context, conn driver.Conn, db, table, c string) (bool, error) {
	sc, err := readColumns(ctx, conn, db)
	if err != nil {
		return false, err
	}
	return sc.has(table, c), nil
}

// readColumns reads the columns of every table of database db.
func readColumns(ctx context.Context, conn driver.Conn, db string) (serverColumns, error) {
	rows, err := conn.Query(ctx, "SELECT table, name FROM system.columns WHERE database = ?", db)
	if err != nil {
		return nil, fmt.Errorf("clickhouse schema: list the columns of %s: %w", db, err)
	}
	defer rows.Close()
	out := serverColumns{}
	for rows.Next() {
		var table, name string
		if err := rows.Scan(&table, &name); err != nil {
			return nil, fmt.Errorf("clickhouse schema: list the columns of %s: %w", db, err)
		}
		if out[table] == nil {
			out[table] = map[string]bool{}
		}
		out[table][name] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clickhouse schema: list the columns of %s: %w", db, err)
	}
	return out, nil
}

// alter is one ALTER TABLE of an upgrade, and the table it alters.
type alter struct{ table, sql string }

// upgradeStatements returns the ALTER TABLE statements that add to the
// tables of database db in layout l the columns of schema.sql that have
// (per have) are missing, one statement per table, in schema.sql's order.
// A table have does not list is left out (CREATE makes it whole). In the
// cluster flavour a table's local part and its Distributed table are
// altered alike, ON CLUSTER; the Distributed one takes a derived column as
// ALIAS, as clusterStatements creates it.
func upgradeStatements(db string, l Layout, have serverColumns) ([]alter, error) {
	tables, err := ddlTables()
	if err != nil {
		return nil, err
	}
	suffixes, on := []string{""}, ""
	if l.Clustered() {
		suffixes, on = []string{LocalSuffix, ""}, " ON CLUSTER "+l.Cluster
	}
	var out []alter
	for _, t := range []string{Events, EventsByDate, DeadLetters, Diagnoses, Findings} {
		cols, ok := tables[t]
		if !ok {
			continue
		}
		for i, suffix := range suffixes {
			name := t + suffix
			if _, ok := have[name]; !ok {
				continue
			}
			var adds []string
			for j, c := range cols {
				if have.has(name, c.name) {
					continue
				}
				def := c.def
				if l.Clustered() && i == 1 {
					def = materialized.ReplaceAllString(def, "${1}ALIAS${2}")
				}
				add := "ADD COLUMN " + def
				if j > 0 {
					add += " AFTER " + cols[j-1].name
				}
				adds = append(adds, add)
			}
			if len(adds) > 0 {
				out = append(out, alter{name, "ALTER TABLE " + db + "." + name + on + " " + strings.Join(adds, ", ")})
			}
		}
	}
	return out, nil
}

// upgrade adds the columns of schema.sql missing from the existing tables
// of db (upgradeStatements). A statement that fails is forgiven when the
// columns are there once read again: another process added them first.
func upgrade(ctx context.Context, conn driver.Conn, db string, l Layout) error {
	have, err := readColumns(ctx, conn, db)
	if err != nil {
		return err
	}
	stmts, err := upgradeStatements(db, l, have)
	if err != nil {
		return err
	}
	for _, a := range stmts {
		err := conn.Exec(ctx, a.sql)
		if err == nil {
			continue
		}
		if again, rerr := readColumns(ctx, conn, db); rerr == nil {
			left, _ := upgradeStatements(db, l, again)
			if !slices.ContainsFunc(left, func(b alter) bool { return b.table == a.table }) {
				continue
			}
		}
		first := a.sql
		if i := strings.Index(first, " ADD COLUMN"); i > 0 {
			first = first[:i]
		}
		return fmt.Errorf("clickhouse schema: %s (adding the columns of this release to a table made by an earlier one): %w "+
			"(check that the user may ALTER tables in %s)", first, err, db)
	}
	return nil
}

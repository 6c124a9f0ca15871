package dash

import (
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/schema"
)

// The same DDL and every dashboard query on a current ClickHouse: chdb-core
// (ClickHouse 26.x in-process) through deploy/chdb/run.py, on the same
// fixture rows, giving the same numbers as fixtureCases and viewCases (the
// ones the 18.16 server gives in TestQueriesOnFixture and
// TestViewsOnFixture).

// fixtureStatements is the schema and the fixture's rows as SQL text.
func fixtureStatements(t *testing.T, db string) []string {
	t.Helper()
	stmts, err := schema.Statements(db)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture()
	events, copies, diagnoses, findings := f.rows()
	return append(stmts,
		testenv.InsertSQL(db, schema.Events, schema.EventColumns, events.Columns()),
		testenv.InsertSQL(db, schema.Events, schema.EventColumns, copies.Columns()),
		testenv.InsertSQL(db, schema.DeadLetters, schema.DeadLetterColumns, schema.DeadLetterColumnsOf(f.dead)),
		testenv.InsertSQL(db, schema.Diagnoses, schema.DiagnosisColumns, diagnoses.Columns()),
		testenv.InsertSQL(db, schema.Findings, schema.FindingColumns, findings.Columns()),
	)
}

// literalSQL is c's query with its parameters as literals.
func (c fixtureCase) literalSQL(t *testing.T, db string) string {
	t.Helper()
	d, _ := lookup(c.query)
	vals, err := d.values(c.paramsFor())
	if err != nil {
		t.Fatal(err)
	}
	return d.render(db, func(name string) (string, bool) {
		v, ok := vals[name]
		if !ok {
			return "", false
		}
		return testenv.SQLLiteral(v.arg), true
	})
}

func TestCurrentClickHouse(t *testing.T) {
	testenv.Integration(t)
	const db = "handoff_chdb"
	begin := time.Now().UnixMilli()
	var queries []testenv.CHDBQuery
	for _, c := range fixtureCases {
		queries = append(queries, testenv.CHDBQuery{Name: c.query, SQL: c.literalSQL(t, db)})
	}
	for _, v := range viewCases {
		queries = append(queries, testenv.CHDBQuery{Name: "view", SQL: strings.ReplaceAll(v.sql, "{db}", db)})
	}
	results := testenv.RunCHDB(t, fixtureStatements(t, db), queries)
	for i, c := range fixtureCases {
		r := results[i]
		if r.Error != "" {
			t.Errorf("%s %v on chdb: %s", c.query, c.params, r.Error)
			continue
		}
		// Ages are now() on another clock: compared as ages from the
		// start of the run to its end.
		if err := matches(r.Rows, c.want, begin, time.Now().UnixMilli()); err != nil {
			t.Errorf("%s %v on chdb: %v", c.query, c.params, err)
		}
	}
	for i, v := range viewCases {
		r := results[len(fixtureCases)+i]
		if r.Error != "" {
			t.Errorf("%s on chdb: %s", v.sql, r.Error)
		} else if err := matches(r.Rows, v.want, 0, 0); err != nil {
			t.Errorf("%s on chdb: %v", v.sql, err)
		}
	}
}

package dash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// The same DDL and every dashboard query on a current ClickHouse: chdb-core
// (ClickHouse 26.x in-process) through deploy/chdb/run.py, on the same
// fixture rows, giving the same numbers as fixtureCases and viewCases (the
// ones the 18.16 server gives in TestQueriesOnFixture and
// TestViewsOnFixture).

// sqlLiteral renders v as a ClickHouse literal. The test harness only:
// chdb has no client-side binding; the Runner binds.
func sqlLiteral(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(x) + "'"
	case time.Time:
		return "'" + x.Format(time.DateOnly) + "'"
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = sqlLiteral(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case int64, int32, uint32, uint8:
		return fmt.Sprint(x)
	}
	panic(fmt.Sprintf("sqlLiteral: no literal for %T", v))
}

// insertSQL renders column-oriented rows as one INSERT ... VALUES.
func insertSQL(db, table, columns string, cols []any) string {
	n := 0
	if len(cols) > 0 {
		n = reflectLen(cols[0])
	}
	var rows []string
	for i := 0; i < n; i++ {
		vals := make([]string, len(cols))
		for j, c := range cols {
			vals[j] = sqlLiteral(index(c, i))
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	return "INSERT INTO " + db + "." + table + " (" + columns + ") VALUES " + strings.Join(rows, ", ")
}

func reflectLen(c any) int {
	switch x := c.(type) {
	case []string:
		return len(x)
	case []time.Time:
		return len(x)
	case []int64:
		return len(x)
	case []int32:
		return len(x)
	case []uint32:
		return len(x)
	case []uint8:
		return len(x)
	case [][]string:
		return len(x)
	}
	panic(fmt.Sprintf("no column type %T", c))
}

func index(c any, i int) any {
	switch x := c.(type) {
	case []string:
		return x[i]
	case []time.Time:
		return x[i]
	case []int64:
		return x[i]
	case []int32:
		return x[i]
	case []uint32:
		return x[i]
	case []uint8:
		return x[i]
	case [][]string:
		return x[i]
	}
	panic(fmt.Sprintf("no column type %T", c))
}

// chdbSpec is deploy/chdb/run.py's input.
type chdbSpec struct {
	Statements []string    `json:"statements"`
	Queries    []chdbQuery `json:"queries"`
}

type chdbQuery struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

type chdbResult struct {
	Name    string     `json:"name"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	Error   string     `json:"error"`
}

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
		insertSQL(db, schema.Events, schema.EventColumns, events.Columns()),
		insertSQL(db, schema.Events, schema.EventColumns, copies.Columns()),
		insertSQL(db, schema.DeadLetters, schema.DeadLetterColumns, schema.DeadLetterColumnsOf(f.dead)),
		insertSQL(db, schema.Diagnoses, schema.DiagnosisColumns, diagnoses.Columns()),
		insertSQL(db, schema.Findings, schema.FindingColumns, findings.Columns()),
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
		return sqlLiteral(v.arg), true
	})
}

func TestCurrentClickHouse(t *testing.T) {
	testenv.Integration(t)
	py := os.Getenv("HANDOFF_CHDB_PYTHON")
	if py == "" {
		t.Fatal("HANDOFF_CHDB_PYTHON is not set: this test needs python3 with chdb-core; run `make test`, " +
			"or `bash deploy/services/chdb.sh install` and `. .data/services.env`")
	}
	const db = "handoff_chdb"
	begin := time.Now().UnixMilli()
	spec := chdbSpec{Statements: fixtureStatements(t, db)}
	for _, c := range fixtureCases {
		spec.Queries = append(spec.Queries, chdbQuery{Name: c.query, SQL: c.literalSQL(t, db)})
	}
	specFile := filepath.Join(t.TempDir(), "spec.json")
	for _, v := range viewCases {
		spec.Queries = append(spec.Queries, chdbQuery{Name: "view", SQL: strings.ReplaceAll(v.sql, "{db}", db)})
	}
	spec.Queries = append(spec.Queries, chdbQuery{Name: "version", SQL: "SELECT version()"})
	in, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specFile, in, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(py, "../../deploy/chdb/run.py", specFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("deploy/chdb/run.py: %v\n%s", err, stderr.String())
	}
	var results []chdbResult
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		t.Fatalf("deploy/chdb/run.py output: %v\n%s", err, stdout.String())
	}
	if len(results) != len(spec.Queries) {
		t.Fatalf("%d results for %d queries", len(results), len(spec.Queries))
	}
	// This check is worth something only on a current release.
	v := results[len(results)-1]
	if len(v.Rows) != 1 || major(v.Rows[0][0]) < 24 {
		t.Fatalf("chdb runs ClickHouse %v, want a current release (24 or later): upgrade chdb-core", v.Rows)
	}
	t.Logf("chdb-core: ClickHouse %s", v.Rows[0][0])
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

// major is the major version of a ClickHouse version string, 0 if none.
func major(version string) int {
	n, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	return n
}

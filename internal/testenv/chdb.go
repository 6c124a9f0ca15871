package testenv

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
)

// A current ClickHouse for tests: chdb-core (ClickHouse 26.x in-process)
// through deploy/chdb/run.py, so SQL that the 18.16 server runs is checked
// on a current release too (docs/testing.md).

// CHDBQuery is one query for RunCHDB.
type CHDBQuery struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

// CHDBResult is the result of one CHDBQuery: every cell as text, or the
// error.
type CHDBResult struct {
	Name    string     `json:"name"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	Error   string     `json:"error"`
}

// RunCHDB runs statements (DDL, INSERTs) in a fresh chdb session, then
// queries, and returns one result per query. It fails t when chdb-core is
// missing (HANDOFF_CHDB_PYTHON unset), when a statement fails, or when
// chdb's ClickHouse is not a current release (24 or later): the check is
// worth something only there.
func RunCHDB(t testing.TB, statements []string, queries []CHDBQuery) []CHDBResult {
	t.Helper()
	Integration(t)
	py := os.Getenv("HANDOFF_CHDB_PYTHON")
	if py == "" {
		t.Fatal("HANDOFF_CHDB_PYTHON is not set: this test needs python3 with chdb-core; run `make test`, " +
			"or `bash deploy/services/chdb.sh install` and `. .data/services.env`")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	spec := struct {
		Statements []string    `json:"statements"`
		Queries    []CHDBQuery `json:"queries"`
	}{statements, append(queries[:len(queries):len(queries)], CHDBQuery{Name: "version", SQL: "SELECT version()"})}
	in, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(specFile, in, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(py, filepath.Join(root, "deploy", "chdb", "run.py"), specFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("deploy/chdb/run.py: %v\n%s", err, stderr.String())
	}
	var results []CHDBResult
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		t.Fatalf("deploy/chdb/run.py output: %v\n%s", err, stdout.String())
	}
	if len(results) != len(spec.Queries) {
		t.Fatalf("deploy/chdb/run.py: %d results for %d queries", len(results), len(spec.Queries))
	}
	v := results[len(results)-1]
	if len(v.Rows) != 1 || major(v.Rows[0][0]) < 24 {
		t.Fatalf("chdb runs ClickHouse %v, want a current release (24 or later): upgrade chdb-core", v.Rows)
	}
	t.Logf("chdb-core: ClickHouse %s", v.Rows[0][0])
	return results[:len(results)-1]
}

// major is the major version of a ClickHouse version string, 0 if none.
func major(version string) int {
	n, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	return n
}

// moduleRoot is the directory of the go.mod above the working directory
// (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// SQLLiteral renders v as a ClickHouse literal. For tests only: chdb has
// no client-side binding; production code binds.
func SQLLiteral(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(x) + "'"
	case time.Time:
		return "'" + x.Format(time.DateOnly) + "'"
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = SQLLiteral(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case int, int64, int32, uint32, uint8:
		return fmt.Sprint(x)
	}
	panic(fmt.Sprintf("SQLLiteral: no literal for %T", v))
}

// BindLiterals replaces each ? of sql, in order, by the literal of the
// next argument, the way the driver binds them. For tests only: sql must
// have no ? inside a string literal.
func BindLiterals(sql string, args []any) string {
	var b strings.Builder
	for _, a := range args {
		i := strings.IndexByte(sql, '?')
		if i < 0 {
			panic(fmt.Sprintf("BindLiterals: %d arguments for fewer placeholders", len(args)))
		}
		b.WriteString(sql[:i])
		b.WriteString(SQLLiteral(a))
		sql = sql[i+1:]
	}
	if strings.IndexByte(sql, '?') >= 0 {
		panic("BindLiterals: more placeholders than arguments")
	}
	b.WriteString(sql)
	return b.String()
}

// InsertSQL renders column-oriented rows (the Columns() of store/schema's
// row types) as one INSERT ... VALUES.
func InsertSQL(db, table, columns string, cols []any) string {
	n := 0
	if len(cols) > 0 {
		n = columnLen(cols[0])
	}
	var rows []string
	for i := 0; i < n; i++ {
		vals := make([]string, len(cols))
		for j, c := range cols {
			vals[j] = SQLLiteral(columnAt(c, i))
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	return "INSERT INTO " + db + "." + table + " (" + columns + ") VALUES " + strings.Join(rows, ", ")
}

func columnLen(c any) int {
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

func columnAt(c any, i int) any {
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

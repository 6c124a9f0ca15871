// Package dash runs handoff's named dashboard queries: the SQL behind
// docs/dashboards.md, the Grafana dashboard of deploy/grafana and the
// dashboard API of `handoff serve`. The queries read the schema's views
// (batch_progress, diagnosis_latest, batch_status, finding_state) with
// their filter inside each view's SELECT (schema.ViewSelect), so it reaches
// the tables' sort key.
//
// A query's parameters are typed and checked here (unknown names, bad
// values, missing required ones, huge values: *ParamError), and reach SQL
// only through clickhouse-go's client-side binding: no request text is ever
// part of the SQL text. Every query has a row limit and, when it takes
// dates, a bounded range, so no call reads an unbounded history.
package dash

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
)

// ParamType is the type of a dashboard query parameter.
type ParamType string

// The parameter types.
const (
	// ParamDate is a calendar date, YYYY-MM-DD.
	ParamDate ParamType = "date"
	// ParamString is a short string (at most MaxStringLen bytes, no control characters).
	ParamString ParamType = "string"
	// ParamInt is a decimal integer within the parameter's bounds.
	ParamInt ParamType = "int"
	// ParamDuration is a Go duration ("90m", "48h"), 0 to MaxDuration.
	ParamDuration ParamType = "duration"
)

// Param describes one parameter of a query.
type Param struct {
	Name     string
	Type     ParamType
	Required bool
	// Default is the value used when the parameter is not given (not for
	// required ones).
	Default string
	Doc     string
}

// Query describes one dashboard query.
type Query struct {
	Name, Title, Doc string
	Params           []Param
}

// Result is a query's output: column names and ClickHouse types, and rows
// whose values encode as JSON (Date as "YYYY-MM-DD", DateTime as RFC 3339
// UTC, non-finite floats as null).
type Result struct {
	Columns []string
	Types   []string
	Rows    [][]any
}

// ParamError is a bad parameter (HTTP 400): which and why.
type ParamError struct {
	Param, Reason string
}

// Error says which parameter and why.
func (e *ParamError) Error() string {
	return fmt.Sprintf("parameter %q: %s", e.Param, e.Reason)
}

// ErrUnknownQuery is wrapped by Run's error for a query name not in Queries.
var ErrUnknownQuery = errors.New("unknown dashboard query")

// Bounds of parameters.
const (
	// MaxDays is the longest date range (to - from + 1) a query accepts.
	MaxDays = 366
	// DefaultLimit is the row limit when none is given.
	DefaultLimit = 1000
	// MaxLimit is the highest row limit accepted.
	MaxLimit = 10000
	// MaxStringLen is the longest string parameter accepted, in bytes.
	MaxStringLen = 256
	// MaxDuration is the longest duration parameter accepted.
	MaxDuration = MaxDays * 24 * time.Hour
)

// Queries lists the dashboard queries, in a stable order.
func Queries() []Query {
	out := make([]Query, len(definitions))
	for i, d := range definitions {
		out[i] = d.Query
		out[i].Params = append([]Param(nil), d.Params...)
	}
	return out
}

// lookup returns the definition named name.
func lookup(name string) (*definition, bool) {
	for i := range definitions {
		if definitions[i].Name == name {
			return &definitions[i], true
		}
	}
	return nil, false
}

// Runner runs dashboard queries against one database.
type Runner struct {
	conn chconn.Conn
	db   string
}

// NewRunner returns a Runner reading database db over conn; db is checked
// by schema.CheckDatabase. The tables must exist (schema.Ensure, which
// `handoff ingest` runs on start); the views need not: the queries inline
// their SELECTs, so a read-only user on a database made by an older
// release can run them.
func NewRunner(conn chconn.Conn, db string) (*Runner, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return nil, err
	}
	return &Runner{conn: conn, db: db}, nil
}

// Run validates params (unknown names, bad values, missing required:
// *ParamError; unknown query name: an error wrapping ErrUnknownQuery) and
// runs the query with bound parameters only.
func (r *Runner) Run(ctx context.Context, name string, params map[string]string) (Result, error) {
	d, ok := lookup(name)
	if !ok {
		return Result{}, fmt.Errorf("%w %q: see Queries() for the names", ErrUnknownQuery, name)
	}
	vals, err := d.values(params)
	if err != nil {
		return Result{}, err
	}
	sql, args := d.bind(r.db, vals)
	rows, err := r.conn.Query(ctx, sql, args...)
	if err != nil {
		return Result{}, fmt.Errorf("dashboard query %s on %s: %w", name, r.db, err)
	}
	defer rows.Close()
	res, err := scan(rows)
	if err != nil {
		return Result{}, fmt.Errorf("dashboard query %s on %s: %w", name, r.db, err)
	}
	return res, nil
}

// value is a checked parameter value, ready to bind.
type value struct {
	arg  any       // bound value
	date time.Time // ParamDate: the date at 00:00 UTC
}

// values checks params against d's parameters and fills defaults.
func (d *definition) values(params map[string]string) (map[string]value, error) {
	for k := range params {
		if !d.has(k) {
			return nil, &ParamError{Param: k, Reason: fmt.Sprintf("unknown parameter of %s (it takes %s)", d.Name, d.paramNames())}
		}
	}
	out := make(map[string]value, len(d.Params))
	for _, p := range d.Params {
		s, given := params[p.Name]
		if !given {
			if p.Required {
				return nil, &ParamError{Param: p.Name, Reason: fmt.Sprintf("required by %s: %s", d.Name, p.Doc)}
			}
			s = p.Default
		}
		v, err := parse(p, s)
		if err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	if f, ok := out["from"]; ok {
		t := out["to"]
		if t.date.Before(f.date) {
			return nil, &ParamError{Param: "to", Reason: fmt.Sprintf("%s is before from %s", t.arg, f.arg)}
		}
		if days := int(t.date.Sub(f.date)/(24*time.Hour)) + 1; days > MaxDays {
			return nil, &ParamError{Param: "to", Reason: fmt.Sprintf("the range %s..%s is %d days: at most %d", f.arg, t.arg, days, MaxDays)}
		}
		out["from_ms"] = value{arg: f.date.UnixMilli()}
		out["to_end_ms"] = value{arg: t.date.AddDate(0, 0, 1).UnixMilli()}
	}
	return out, nil
}

func (d *definition) has(name string) bool {
	for _, p := range d.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (d *definition) paramNames() string {
	if len(d.Params) == 0 {
		return "none"
	}
	names := make([]string, len(d.Params))
	for i, p := range d.Params {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// parse checks one parameter's text.
func parse(p Param, s string) (value, error) {
	bad := func(format string, a ...any) (value, error) {
		return value{}, &ParamError{Param: p.Name, Reason: fmt.Sprintf(format, a...)}
	}
	if len(s) > MaxStringLen {
		return bad("%d bytes: at most %d", len(s), MaxStringLen)
	}
	switch p.Type {
	case ParamDate:
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return bad("%q is not a date: want YYYY-MM-DD", s)
		}
		// Date columns hold 1970-01-01..2105-12-31; 1970-01-01 is the
		// heartbeats' "no date".
		if t.Year() < 1970 || t.Year() > 2105 || (t.Year() == 1970 && t.YearDay() == 1) {
			return bad("%s is out of range: want 1970-01-02..2105-12-31", s)
		}
		return value{arg: s, date: t}, nil
	case ParamString:
		if !utf8.ValidString(s) {
			return bad("not valid UTF-8")
		}
		for _, c := range s {
			if c < 0x20 || c == 0x7f {
				return bad("control character %U: not allowed", c)
			}
		}
		return value{arg: s}, nil
	case ParamInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad("%q is not a decimal integer", s)
		}
		if p.Name == "limit" && (n < 1 || n > MaxLimit) {
			return bad("%d is out of range: want 1..%d", n, MaxLimit)
		}
		return value{arg: n}, nil
	case ParamDuration:
		dur, err := time.ParseDuration(s)
		if err != nil {
			return bad("%q is not a duration: want e.g. 90m or 48h", s)
		}
		if dur < 0 || dur > MaxDuration {
			return bad("%s is out of range: want 0..%s", s, MaxDuration)
		}
		return value{arg: dur.Milliseconds()}, nil
	}
	return bad("unknown type %q", p.Type)
}

// bind turns d's SQL into the text sent, with a `?` for every parameter
// marker and the arguments in order. {db} (checked) and {now_ms} (a fixed
// expression) are the only text substituted.
func (d *definition) bind(db string, vals map[string]value) (string, []any) {
	var args []any
	sql := d.render(db, func(name string) (string, bool) {
		v, ok := vals[name]
		if ok {
			args = append(args, v.arg)
		}
		return "?", ok
	})
	return sql, args
}

// render returns d's SQL for database db, the views it reads inlined with
// d.where inside them, and every {name} marker for which marker reports
// true replaced by its text; other braces are kept.
// bind renders for the server; the tests and the Grafana dashboard render
// their own stand-ins from the same text.
func (d *definition) render(db string, marker func(name string) (string, bool)) string {
	var b strings.Builder
	src := d.sql
	for _, v := range schema.Views() {
		if tok := "{view:" + v + "}"; strings.Contains(src, tok) {
			sel, _ := schema.ViewSelect(db, v, d.where)
			src = strings.ReplaceAll(src, tok, "(\n"+sel+"\n)")
		}
	}
	src = strings.ReplaceAll(src, "{db}", db)
	src = strings.ReplaceAll(src, "{now_ms}", nowMS)
	for {
		i := strings.IndexByte(src, '{')
		if i < 0 {
			b.WriteString(src)
			break
		}
		j := strings.IndexByte(src[i:], '}')
		if j < 0 {
			b.WriteString(src)
			break
		}
		text, ok := marker(src[i+1 : i+j])
		if !ok {
			b.WriteString(src[:i+1])
			src = src[i+1:]
			continue
		}
		b.WriteString(src[:i])
		b.WriteString(text)
		src = src[i+j+1:]
	}
	return b.String()
}

// scan reads every row generically, converting values to JSON-friendly ones.
func scan(rows chconn.Rows) (Result, error) {
	cts := rows.ColumnTypes()
	res := Result{Columns: rows.Columns(), Types: make([]string, len(cts)), Rows: [][]any{}}
	ptrs := make([]any, len(cts))
	for i, ct := range cts {
		res.Types[i] = ct.DatabaseTypeName()
	}
	for rows.Next() {
		for i, ct := range cts {
			ptrs[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(ptrs...); err != nil {
			return Result{}, fmt.Errorf("scan: %w", err)
		}
		row := make([]any, len(cts))
		for i, p := range ptrs {
			row[i] = jsonValue(res.Types[i], reflect.ValueOf(p).Elem().Interface())
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return Result{}, err
	}
	return res, nil
}

// jsonValue makes v encodable as JSON with a stable text.
func jsonValue(typ string, v any) any {
	switch x := v.(type) {
	case time.Time:
		if strings.HasPrefix(typ, "Date") && !strings.HasPrefix(typ, "DateTime") {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	}
	return v
}

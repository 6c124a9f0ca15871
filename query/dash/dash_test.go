package dash

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

// fixtureRange is the parameters every dated query gets in the tests (and
// in docs/dashboards.md).
var fixtureRange = map[string]string{"from": "2026-09-28", "to": "2026-10-01"}

// exampleParams returns the parameters the tests (and the docs) run query
// q with on the fixture.
func exampleParams(q Query) map[string]string {
	p := map[string]string{}
	for _, x := range q.Params {
		if v, ok := fixtureRange[x.Name]; ok {
			p[x.Name] = v
		}
	}
	if q.Name == "dead_letters_by_reason" {
		p["from"], p["to"] = "2026-10-01", "2026-10-01"
	}
	return p
}

// fixtureCase is one query call on the fixture and the rows it must give,
// each cell as fmt.Sprint prints it; a cell "~age:MS" is an age in seconds
// that must equal now minus MS (within the test's duration).
type fixtureCase struct {
	query  string
	params map[string]string // added to exampleParams
	want   [][]string
}

func sms(s string) string { return strconv.FormatInt(ms(s), 10) }

// The boundary gaps of the fixture's pipelines, in ms, in event order (the
// seed's times: finalized 2.53 s before produced, so produced comes after
// finalized; consumed 15 and 35 minutes after identified). quantileExact
// of two values is the higher one.
var (
	absLatency = [][]string{
		{abs, "produced", "3", "2530", "2530", "2530", "2530"},
		{abs, "signaled", "3", "1290", "1290", "1290", "1290"},
		{abs, "transferred", "3", "358820", "358820", "358820", "358820"},
		{abs, "signal_delivered", "2", "880", "880", "880", "880"},
		{abs, "identified", "2", "294000", "294000", "294000", "294000"},
		{abs, "consumed", "2", "2100000", "2100000", "2100000", "2100000"},
	}
	fxLatency = [][]string{
		{fx, "finalized", "1", "1000", "1000", "1000", "1000"},
		{fx, "signaled", "1", "1000", "1000", "1000", "1000"},
		{fx, "transferred", "1", "598000", "598000", "598000", "598000"},
		{fx, "signal_delivered", "1", "1000", "1000", "1000", "1000"},
		{fx, "identified", "1", "299000", "299000", "299000", "299000"},
		{fx, "consumed", "1", "900000", "900000", "900000", "900000"},
	}
)

var fixtureCases = []fixtureCase{
	{query: "batch_status", want: [][]string{
		{abs, "2026-09-28", "20260928", "broken", "delivered", "", "diagnosis", "7", sms("2026-09-28T18:00:00Z"), abs + "/2026-09-28/20260928"},
		{abs, "2026-09-29", "20260929", "delivered", "delivered", "", "events", "7", sms("2026-09-29T17:40:00Z"), abs + "/2026-09-29/20260929"},
		{abs, "2026-09-30", "20260930", "late", "not_identified", "signal_delivered", "diagnosis", "4", sms("2026-09-30T17:20:05.120Z"), abs + "/2026-09-30/20260930"},
		{fx, "2026-09-29", "20260929", "broken", "not_final", "finalized", "diagnosis", "1", sms("2026-09-29T06:00:00Z"), fx + "/2026-09-29/20260929"},
		{fx, "2026-09-30", "20260930", "failed", "not_produced", "produced", "events", "2", sms("2026-09-30T06:05:00Z"), fx + "/2026-09-30/20260930"},
		{fx, "2026-10-01", "20261001", "delivered", "delivered", "", "events", "7", sms("2026-10-01T06:30:00Z"), fx + "/2026-10-01/20261001"},
	}},
	{query: "batch_status", params: map[string]string{"pipeline": fx, "status": "failed"}, want: [][]string{
		{fx, "2026-09-30", "20260930", "failed", "not_produced", "produced", "events", "2", sms("2026-09-30T06:05:00Z"), fx + "/2026-09-30/20260930"},
	}},
	{query: "batch_status", params: map[string]string{"from": "2026-09-30", "to": "2026-09-30", "limit": "1"}, want: [][]string{
		{abs, "2026-09-30", "20260930", "late", "not_identified", "signal_delivered", "diagnosis", "4", sms("2026-09-30T17:20:05.120Z"), abs + "/2026-09-30/20260930"},
	}},
	{query: "boundary_funnel", want: [][]string{
		{abs, "3", "3", "3", "3", "3", "2", "2", "2"},
		{fx, "3", "2", "1", "1", "1", "1", "1", "1"},
	}},
	{query: "boundary_latency", want: append(slices.Clone(absLatency), fxLatency...)},
	{query: "boundary_latency", params: map[string]string{"pipeline": fx}, want: fxLatency},
	{query: "breaks_over_time", want: [][]string{
		{"2026-09-28", "delivered", "", "1"},
		{"2026-09-29", "not_final", "finalized", "1"},
		{"2026-09-30", "not_identified", "signal_delivered", "1"},
		{"2026-09-30", "not_produced", "produced", "1"},
	}},
	{query: "anomalies_by_kind", want: [][]string{
		{"row_mismatch", "1", "1", "2026-09-28", "2026-09-28"},
		{"success_without_artifact", "1", "1", "2026-09-29", "2026-09-29"},
	}},
	{query: "success_not_delivered", want: [][]string{
		{abs, "3", "1", "0", "0.3333"},
		{fx, "2", "1", "0", "0.5"},
	}},
	{query: "open_findings", want: [][]string{
		{fx + "/2026-09-30/20260930", "overdue", "produced", "failed", "not_produced", "critical", sms("2026-09-30T08:00:00Z"), "~age:" + sms("2026-09-30T08:00:00Z")},
		{abs + "/2026-09-30/20260930", "overdue", "signal_delivered", "late", "not_identified", "critical", sms("2026-09-30T23:00:00Z"), "~age:" + sms("2026-09-30T23:00:00Z")},
	}},
	{query: "open_findings", params: map[string]string{"pipeline": abs, "min_age": "1h"}, want: [][]string{
		{abs + "/2026-09-30/20260930", "overdue", "signal_delivered", "late", "not_identified", "critical", sms("2026-09-30T23:00:00Z"), "~age:" + sms("2026-09-30T23:00:00Z")},
	}},
	{query: "open_findings", params: map[string]string{"min_age": "8760h"}, want: [][]string{}},
	{query: "late_deliveries", want: [][]string{
		{fx + "/2026-09-30/20260930", "produced", "open", sms("2026-09-30T06:00:00Z"), "7200000", "0"},
		{abs + "/2026-09-30/20260930", "signal_delivered", "open", sms("2026-09-30T22:00:00Z"), "3600000", "0"},
		{abs + "/2026-09-29/20260929", "consumed", "resolved", sms("2026-09-29T17:20:00Z"), "1200000", sms("2026-09-29T17:40:00Z")},
	}},
	{query: "late_deliveries", params: map[string]string{"min_lateness": "1h"}, want: [][]string{
		{fx + "/2026-09-30/20260930", "produced", "open", sms("2026-09-30T06:00:00Z"), "7200000", "0"},
		{abs + "/2026-09-30/20260930", "signal_delivered", "open", sms("2026-09-30T22:00:00Z"), "3600000", "0"},
	}},
	{query: "lateness_by_day", want: [][]string{
		{"2026-09-29", abs, "1200000"},
		{"2026-09-30", abs, "3600000"},
		{"2026-09-30", fx, "7200000"},
	}},
	{query: "lateness_by_day", params: map[string]string{"pipeline": fx}, want: [][]string{
		{"2026-09-30", fx, "7200000"},
	}},
	{query: "dead_letters_by_reason", want: [][]string{
		{"bad_json", "handoff.events", "2", sms("2026-10-01T01:00:00Z"), sms("2026-10-01T02:00:05Z"), "not a JSON object"},
		{"missing_field", "handoff.findings", "1", sms("2026-10-01T03:00:00Z"), sms("2026-10-01T03:00:00Z"), "missing field fingerprint"},
	}},
	{query: "freshness", want: [][]string{
		{"dead_letters", "", "", sms("2026-10-01T03:00:00Z"), "~age:" + sms("2026-10-01T03:00:00Z")},
		{"diagnoses", "", "", sms("2026-10-01T07:00:00Z"), "~age:" + sms("2026-10-01T07:00:00Z")},
		{"events", "", "", sms("2026-10-01T07:00:00Z"), "~age:" + sms("2026-10-01T07:00:00Z")},
		{"findings", "", "", sms("2026-10-01T07:00:00Z"), "~age:" + sms("2026-10-01T07:00:00Z")},
		{"heartbeat", abs, "consumer-1", sms("2026-10-01T06:00:00Z"), "~age:" + sms("2026-10-01T06:00:00Z")},
		{"heartbeat", "handoff.detect", "detect-1", sms("2026-10-01T06:59:30Z"), "~age:" + sms("2026-10-01T06:59:30Z")},
	}},
	{query: "pipelines", want: [][]string{{abs}, {fx}}},
	{query: "pipelines", params: map[string]string{"from": "2026-10-01", "to": "2026-10-01"}, want: [][]string{{fx}}},
}

// params returns the call's parameters: the example ones, overridden.
func (c fixtureCase) paramsFor() map[string]string {
	q, _ := lookup(c.query)
	p := exampleParams(q.Query)
	for k, v := range c.params {
		p[k] = v
	}
	return p
}

// cells prints every cell of res as fmt.Sprint does.
func cells(res Result) [][]string {
	out := make([][]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = make([]string, len(r))
		for j, v := range r {
			out[i][j] = fmt.Sprint(v)
		}
	}
	return out
}

// matches compares got with want; ages are checked against [before, after]
// (Unix ms around the query).
func matches(got, want [][]string, before, after int64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d rows, want %d:\n got %q\nwant %q", len(got), len(want), got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			return fmt.Errorf("row %d: %d columns, want %d: %q", i, len(got[i]), len(want[i]), got[i])
		}
		for j, w := range want[i] {
			if rest, ok := strings.CutPrefix(w, "~age:"); ok {
				from, _ := strconv.ParseInt(rest, 10, 64)
				age, err := strconv.ParseInt(got[i][j], 10, 64)
				if err != nil || age < (before-from)/1000-1 || age > (after-from)/1000+1 {
					return fmt.Errorf("row %d column %d: age %s s, want now - %s ms (%d..%d s)", i, j, got[i][j], rest, (before-from)/1000, (after-from)/1000)
				}
				continue
			}
			if got[i][j] != w {
				return fmt.Errorf("row %d column %d: %q, want %q\n got %q\nwant %q", i, j, got[i][j], w, got[i], want[i])
			}
		}
	}
	return nil
}

// loadFixture makes a fresh database with the schema and the fixture.
func loadFixture(t *testing.T) (driver.Conn, string) {
	t.Helper()
	d := storetest.NewDB(t, "dash_test")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := fixture().load(ctx, d.Sink); err != nil {
		t.Fatal(err)
	}
	return d.Conn, d.Name
}

// TestQueriesOnFixture runs every dashboard query on the fixture on the
// real server and checks every number.
func TestQueriesOnFixture(t *testing.T) {
	conn, db := loadFixture(t)
	r, err := NewRunner(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{}
	for _, c := range fixtureCases {
		tested[c.query] = true
		t.Run(c.query, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			before := time.Now().UnixMilli()
			res, err := r.Run(ctx, c.query, c.paramsFor())
			after := time.Now().UnixMilli()
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Columns) != len(res.Types) {
				t.Errorf("%d columns, %d types", len(res.Columns), len(res.Types))
			}
			if err := matches(cells(res), c.want, before, after); err != nil {
				t.Errorf("%s %v: %v", c.query, c.params, err)
			}
		})
	}
	for _, q := range Queries() {
		if !tested[q.Name] {
			t.Errorf("query %s has no fixture case", q.Name)
		}
	}
}

// viewCases read the views directly (as a BI tool or Grafana would,
// without query/dash); {db} is the database.
var viewCases = []struct {
	sql  string
	want [][]string
}{
	// One row per batch, heartbeats excluded, the stored copy not counted twice.
	{"SELECT count(), sum(event_count), countIf(events_verdict = 'delivered') FROM {db}.batch_progress",
		[][]string{{"6", "28", "3"}}},
	{"SELECT events_verdict, events_first_missing, produced_ms, signal_delivered_ms FROM {db}.batch_progress WHERE pipeline = '" + abs + "' AND business_date = '2026-09-30'",
		[][]string{{"not_identified", "signal_delivered", sms("2026-09-30T17:14:05.010Z"), "0"}}},
	// The latest diagnosis wins.
	{"SELECT latest_status, latest_as_of_ms FROM {db}.diagnosis_latest WHERE pipeline = '" + abs + "' AND business_date = '2026-09-30'",
		[][]string{{"late", sms("2026-10-01T00:00:00Z")}}},
	{"SELECT source, count() FROM {db}.batch_status GROUP BY source ORDER BY source",
		[][]string{{"diagnosis", "3"}, {"events", "3"}}},
	{"SELECT pipeline, business_date, status, verdict, first_missing FROM {db}.batch_status WHERE status != 'delivered' ORDER BY pipeline, business_date",
		[][]string{
			{abs, "2026-09-28", "broken", "delivered", ""},
			{abs, "2026-09-30", "late", "not_identified", "signal_delivered"},
			{fx, "2026-09-29", "broken", "not_final", "finalized"},
			{fx, "2026-09-30", "failed", "not_produced", "produced"},
		}},
	// The latest record of each finding.
	{"SELECT fingerprint, latest_seq, toString(latest_state), latest_lateness_ms FROM {db}.finding_state ORDER BY fingerprint",
		[][]string{{"f1", "2", "open", "3600000"}, {"f2", "2", "resolved", "0"}, {"f3", "2", "resolved", "1200000"}, {"f4", "1", "open", "7200000"}}},
}

// TestViewsOnFixture reads every view on the real server and checks what
// it holds.
func TestViewsOnFixture(t *testing.T) {
	conn, db := loadFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := map[string]bool{}
	for _, tt := range viewCases {
		sql := strings.ReplaceAll(tt.sql, "{db}", db)
		for _, v := range schema.Views() {
			if strings.Contains(sql, db+"."+v+" ") {
				read[v] = true
			}
		}
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		res, err := scan(rows)
		rows.Close()
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if err := matches(cells(res), tt.want, 0, 0); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
	for _, v := range schema.Views() {
		if !read[v] {
			t.Errorf("view %s is not read by any case", v)
		}
	}
}

// TestRunErrors: bad calls are refused before any SQL is sent, with the
// parameter and the reason.
func TestRunErrors(t *testing.T) {
	r := &Runner{db: "never_queried"} // no connection: a call that got through would panic
	huge := strings.Repeat("x", MaxStringLen+1)
	for _, tt := range []struct {
		name   string
		params map[string]string
		param  string // "" for ErrUnknownQuery
		reason string
	}{
		{"nope", nil, "", ""},
		{"batch_status", map[string]string{"to": "2026-10-01"}, "from", "required"},
		{"batch_status", map[string]string{"from": "2026-09-28"}, "to", "required"},
		{"batch_status", map[string]string{"from": "2026-13-01", "to": "2026-10-01"}, "from", "not a date"},
		{"batch_status", map[string]string{"from": "2026-09-28' OR 1=1 --", "to": "2026-10-01"}, "from", "not a date"},
		{"batch_status", map[string]string{"from": "1970-01-01", "to": "2026-10-01"}, "from", "out of range"},
		{"batch_status", map[string]string{"from": "2026-10-02", "to": "2026-10-01"}, "to", "before from"},
		{"batch_status", map[string]string{"from": "2020-01-01", "to": "2026-10-01"}, "to", "at most 366"},
		{"batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "limit": "0"}, "limit", "out of range"},
		{"batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "limit": "10001"}, "limit", "out of range"},
		{"batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "limit": "99999999999999999999"}, "limit", "not a decimal integer"},
		{"batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "limit": "1; DROP TABLE x"}, "limit", "not a decimal integer"},
		{"batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "pipeline": huge}, "pipeline", "at most 256"},
		{"batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "pipeline": "a\nb"}, "pipeline", "control character"},
		{"batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "pipeline": "\xff"}, "pipeline", "UTF-8"},
		{"batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "db": "x"}, "db", "unknown parameter"},
		{"open_findings", map[string]string{"min_age": "-1h"}, "min_age", "out of range"},
		{"open_findings", map[string]string{"min_age": "10000h"}, "min_age", "out of range"},
		{"open_findings", map[string]string{"min_age": "soon"}, "min_age", "not a duration"},
		{"freshness", map[string]string{"from": "2026-09-28"}, "from", "unknown parameter"},
	} {
		_, err := r.Run(context.Background(), tt.name, tt.params)
		if tt.param == "" {
			if !errors.Is(err, ErrUnknownQuery) {
				t.Errorf("%s: %v, want ErrUnknownQuery", tt.name, err)
			}
			continue
		}
		var pe *ParamError
		if !errors.As(err, &pe) {
			t.Errorf("%s %q: %v, want a *ParamError", tt.name, tt.params, err)
			continue
		}
		if pe.Param != tt.param || !strings.Contains(pe.Reason, tt.reason) || !strings.Contains(err.Error(), tt.param) {
			t.Errorf("%s %q: %v, want parameter %s, reason containing %q", tt.name, tt.params, err, tt.param, tt.reason)
		}
	}
}

// TestHostileValuesAreBound: values that would rewrite a query if they
// were pasted into it are bound as data: the call succeeds and matches
// nothing.
func TestHostileValuesAreBound(t *testing.T) {
	conn, db := loadFixture(t)
	r, err := NewRunner(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, v := range []string{`' OR 1=1 --`, `x') OR ('1'='1`, `\' OR 1=1 --`, "{db}", "{pipeline}", "?", "@pipeline", "$1"} {
		res, err := r.Run(ctx, "batch_status", map[string]string{"from": "2026-09-28", "to": "2026-10-01", "pipeline": v})
		if err != nil {
			t.Errorf("pipeline %q: %v", v, err)
			continue
		}
		if len(res.Rows) != 0 {
			t.Errorf("pipeline %q matched %d rows: it reached the SQL as text", v, len(res.Rows))
		}
	}
}

// TestDefinitions: every query's SQL uses exactly its parameters (and the
// derived markers), has a LIMIT, and every date range is bounded.
func TestDefinitions(t *testing.T) {
	derived := []string{"db", "now_ms", "from_ms", "to_end_ms"}
	seen := map[string]bool{}
	for _, d := range definitions {
		if seen[d.Name] {
			t.Errorf("query %s defined twice", d.Name)
		}
		seen[d.Name] = true
		if d.Title == "" || d.Doc == "" {
			t.Errorf("%s: no title or doc", d.Name)
		}
		if !strings.Contains(d.sql, "LIMIT {limit}") {
			t.Errorf("%s: no LIMIT {limit}", d.Name)
		}
		var names []string
		for _, p := range d.Params {
			names = append(names, p.Name)
			if p.Doc == "" {
				t.Errorf("%s: parameter %s has no doc", d.Name, p.Name)
			}
			text := d.sql + d.where
			if !strings.Contains(text, "{"+p.Name+"}") && !(p.Name == "from" && strings.Contains(text, "{from_ms}")) && !(p.Name == "to" && strings.Contains(text, "{to_end_ms}")) {
				t.Errorf("%s: parameter %s is not used", d.Name, p.Name)
			}
		}
		for _, m := range markers(d.sql + d.where) {
			if view, ok := strings.CutPrefix(m, "view:"); ok {
				if !slices.Contains(schema.Views(), view) {
					t.Errorf("%s: {%s}: no such view", d.Name, m)
				}
				if d.where == "" {
					t.Errorf("%s reads view %s with no filter", d.Name, view)
				}
				continue
			}
			if !slices.Contains(names, m) && !slices.Contains(derived, m) {
				t.Errorf("%s: marker {%s} is no parameter", d.Name, m)
			}
		}
		if strings.Contains(d.sql, "FINAL") || strings.Contains(d.sql, "?") {
			t.Errorf("%s: FINAL or a raw placeholder in the SQL", d.Name)
		}
	}
}

// markers lists the {name} markers of sql.
func markers(sql string) []string {
	var out []string
	for {
		i := strings.IndexByte(sql, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(sql[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, sql[i+1:i+j])
		sql = sql[i+j+1:]
	}
}

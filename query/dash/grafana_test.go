package dash

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
)

// deploy/grafana/dashboards/handoff.json is written by the program in
// deploy/grafana (go run ./deploy/grafana), whose test checks it byte for
// byte. The tests here run what the file holds, every panel's SQL and the
// pipeline variable's, on the fixture: on the 18.16 server and on a
// current ClickHouse (chdb), with Grafana's macros and variables expanded
// as the ClickHouse plugin does, and check the numbers of the query each
// one shows.

const grafanaFile = "../../deploy/grafana/dashboards/handoff.json"

// grafanaSQLs parses the dashboard file: the SQL of every panel target
// and query variable, by title (or variable name).
func grafanaSQLs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				RawSQL     string `json:"rawSql"`
				Datasource struct {
					Type string `json:"type"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Name  string `json:"name"`
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", grafanaFile, err)
	}
	out := map[string]string{}
	for _, p := range dash.Panels {
		if p.Type == "text" {
			continue
		}
		if len(p.Targets) != 1 || p.Targets[0].Datasource.Type != "grafana-clickhouse-datasource" {
			t.Errorf("panel %q: want one ClickHouse target, got %+v", p.Title, p.Targets)
			continue
		}
		out["panel "+p.Title] = p.Targets[0].RawSQL
	}
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			out["variable "+v.Name] = v.Query
		}
	}
	return out
}

// grafanaRun is one piece of the dashboard's SQL, expanded for a run on
// the fixture, and the fixture case whose rows it must give.
type grafanaRun struct {
	where string // panel TITLE or variable NAME
	sql   func(db string) string
	c     fixtureCase
}

// grafanaRuns pairs every SQL of the dashboard with its query's first
// fixture case (the example parameters: the panels' defaults), failing t
// when a SQL is no query's or a query is missing from the dashboard.
func grafanaRuns(t *testing.T) []grafanaRun {
	t.Helper()
	byName := map[string]string{} // query name -> panel SQL
	for _, d := range definitions {
		s, err := GrafanaSQL(d.Name)
		if err != nil {
			t.Fatal(err)
		}
		byName[d.Name] = s
	}
	queryOf := map[string]string{}
	for name, s := range byName {
		queryOf[s] = name
	}
	var runs []grafanaRun
	seen := map[string]bool{}
	for where, sql := range grafanaSQLs(t) {
		name, ok := queryOf[sql]
		if !ok {
			t.Errorf("%s: SQL is no dashboard query's as GrafanaSQL renders it (regenerate: go run ./deploy/grafana)", where)
			continue
		}
		seen[name] = true
		var c fixtureCase
		for _, fc := range fixtureCases {
			if fc.query == name && len(fc.params) == 0 {
				c = fc
				break
			}
		}
		if c.query == "" {
			t.Fatalf("query %s has no fixture case with the example parameters", name)
		}
		// The example range: the fixture's dates (for dead letters, its
		// last day), as the time picker gives them to the plugin.
		from, to := "toDateTime(1790553600)", "toDateTime(1790899199)" // 2026-09-28T00:00:00Z, 2026-10-01T23:59:59Z
		if name == "dead_letters_by_reason" {
			from = "toDateTime(1790812800)" // 2026-10-01T00:00:00Z
		}
		runs = append(runs, grafanaRun{where: where, c: c, sql: func(db string) string {
			return strings.NewReplacer(
				"$__fromTime", from, "$__toTime", to,
				"${pipeline:sqlstring}", "''", // the All option's value
				"${database:raw}", db,
			).Replace(sql)
		}})
	}
	for _, d := range definitions {
		if !seen[d.Name] {
			t.Errorf("query %s is not on the dashboard", d.Name)
		}
	}
	if from, to := time.Unix(1790553600, 0).UTC(), time.Unix(1790899199, 0).UTC(); from.Format(time.DateOnly) != "2026-09-28" || to.Format(time.DateOnly) != "2026-10-01" {
		t.Fatalf("the expanded times are %v..%v, not the fixture's dates", from, to)
	}
	return runs
}

// TestGrafanaOnServer runs the dashboard's SQL on the 18.16 server.
func TestGrafanaOnServer(t *testing.T) {
	conn, db := loadFixture(t)
	runs := grafanaRuns(t)
	for _, r := range runs {
		sql := r.sql(db)
		if strings.Contains(sql, "$") {
			t.Errorf("%s: a Grafana macro or variable is left unexpanded:\n%s", r.where, sql)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		before := time.Now().UnixMilli()
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			cancel()
			t.Errorf("%s: %v\n%s", r.where, err, sql)
			continue
		}
		res, err := scan(rows)
		rows.Close()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if err := matches(cells(res), r.c.want, before, time.Now().UnixMilli()); err != nil {
			t.Errorf("%s on 18.16: %v", r.where, err)
		}
	}
	if len(runs) != len(definitions) {
		t.Errorf("%d pieces of SQL on the dashboard for %d queries", len(runs), len(definitions))
	}
}

// TestGrafanaOnCurrentClickHouse runs the same SQL on chdb (ClickHouse
// 26.x in-process), on the same fixture rows.
func TestGrafanaOnCurrentClickHouse(t *testing.T) {
	testenv.Integration(t)
	const db = "handoff_chdb"
	runs := grafanaRuns(t)
	var queries []testenv.CHDBQuery
	for _, r := range runs {
		queries = append(queries, testenv.CHDBQuery{Name: r.where, SQL: r.sql(db)})
	}
	begin := time.Now().UnixMilli()
	results := testenv.RunCHDB(t, fixtureStatements(t, db), queries)
	for i, r := range runs {
		res := results[i]
		if res.Error != "" {
			t.Errorf("%s on chdb: %s", r.where, res.Error)
			continue
		}
		if err := matches(res.Rows, r.c.want, begin, time.Now().UnixMilli()); err != nil {
			t.Errorf("%s on chdb: %v", r.where, err)
		}
	}
}

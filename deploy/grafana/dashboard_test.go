package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/query/dash"
)

var update = flag.Bool("update", false, "rewrite dashboards/handoff.json")

// The test runs in deploy/grafana.
var checkedIn = filepath.Join("dashboards", "handoff.json")

// TestGenerated: the checked-in file is, byte for byte, what the program
// writes. Refresh it with go run ./deploy/grafana (or go test
// ./deploy/grafana -update).
func TestGenerated(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(checkedIn, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(checkedIn)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("deploy/grafana/%s is not what the program writes: run go run ./deploy/grafana from the repository root", checkedIn)
	}
	again, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, want) {
		t.Error("two renders differ: the output depends on map order or the clock")
	}
}

// file is the parts of the dashboard JSON the checks below read.
type file struct {
	Inputs []struct {
		Name, Type, PluginID string
	} `json:"__inputs"`
	Time  struct{ From, To string }
	Links []struct {
		URL string `json:"url"`
	}
	Templating struct {
		List []struct {
			Type, Name, Query string
			Datasource        struct{ Type, UID string }
			AllValue          string `json:"allValue"`
			Current           struct{ Value string }
		}
	}
	Panels []struct {
		ID         int
		Type       string
		Title      string
		Datasource struct{ Type, UID string }
		Options    struct{ Content string }
		Targets    []struct {
			Datasource struct{ Type, UID string }
			Format     int
			QueryType  string `json:"queryType"`
			RawSQL     string `json:"rawSql"`
		}
		FieldConfig struct {
			Defaults struct {
				Unit string
			}
			Overrides []struct {
				Matcher struct {
					ID      string
					Options string
				}
				Properties []struct {
					ID    string
					Value json.RawMessage
				}
			}
		} `json:"fieldConfig"`
	}
}

func load(t *testing.T) file {
	t.Helper()
	b, err := render()
	if err != nil {
		t.Fatal(err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestImportable: the data source is an import input, never a hard-coded
// uid; every panel and the pipeline variable read through it.
func TestImportable(t *testing.T) {
	f := load(t)
	if len(f.Inputs) != 1 || f.Inputs[0].Name != dsInput || f.Inputs[0].Type != "datasource" || f.Inputs[0].PluginID != pluginID {
		t.Fatalf("__inputs = %+v, want one datasource input %s for %s", f.Inputs, dsInput, pluginID)
	}
	var dsVar bool
	for _, v := range f.Templating.List {
		if v.Type == "datasource" {
			dsVar = v.Name == "datasource" && v.Query == pluginID && v.Current.Value == "${"+dsInput+"}"
		}
		if v.Type == "query" && (v.Datasource.UID != "${datasource}" || v.Datasource.Type != pluginID) {
			t.Errorf("variable %s reads %+v, want the datasource variable", v.Name, v.Datasource)
		}
	}
	if !dsVar {
		t.Errorf("no datasource variable defaulting to the import input: %+v", f.Templating.List)
	}
	for _, p := range f.Panels {
		if p.Type == "text" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v", p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" || tg.Datasource.Type != pluginID {
				t.Errorf("panel %q target: datasource %+v", p.Title, tg.Datasource)
			}
		}
	}
}

// TestPanels: every dashboard query of query/dash is on the dashboard once
// (a panel, or the pipeline variable), with its SQL as dash.GrafanaSQL
// gives it; the time series are time series; times, durations and
// statuses are formatted; the batch columns link to handoff serve.
func TestPanels(t *testing.T) {
	f := load(t)
	used := map[string]int{}
	sqlOf := map[string]string{}
	for _, q := range dash.Queries() {
		s, err := dash.GrafanaSQL(q.Name)
		if err != nil {
			t.Fatal(err)
		}
		sqlOf[s] = q.Name
	}
	ids := map[int]bool{}
	for _, p := range f.Panels {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or repeated", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "text" {
			continue
		}
		if len(p.Targets) != 1 {
			t.Errorf("panel %q: %d targets, want 1", p.Title, len(p.Targets))
			continue
		}
		name, ok := sqlOf[p.Targets[0].RawSQL]
		if !ok {
			t.Errorf("panel %q: SQL is no dashboard query's", p.Title)
			continue
		}
		used[name]++
		series := p.Type == "timeseries"
		if series != (p.Targets[0].Format == formatTimeSeries && p.Targets[0].QueryType == "timeSeries") {
			t.Errorf("panel %q (%s): format %d, queryType %s", p.Title, p.Type, p.Targets[0].Format, p.Targets[0].QueryType)
		}
		// Every *_ms column of a table is a time or a duration, every age
		// is in seconds, every status-like column is coloured.
		formatted := map[string]string{}
		for _, o := range p.FieldConfig.Overrides {
			for _, pr := range o.Properties {
				formatted[o.Matcher.Options] += pr.ID + "=" + string(pr.Value) + ";"
			}
		}
		for col, props := range formatted {
			switch {
			case strings.HasSuffix(col, "_ms") && !strings.Contains(props, `unit="dateTimeAsIso"`) && !strings.Contains(props, `unit="ms"`):
				t.Errorf("panel %q: column %s is neither a time nor a duration: %s", p.Title, col, props)
			case col == "age_s" && !strings.Contains(props, `unit="s"`):
				t.Errorf("panel %q: age_s not in seconds: %s", p.Title, props)
			case col == "batch" && !strings.Contains(props, "${serve_url}/batches/${__data.fields.batch}"):
				t.Errorf("panel %q: batch does not link to the batch page: %s", p.Title, props)
			case (col == "status" || col == "state" || col == "severity") && !strings.Contains(props, "color-background"):
				t.Errorf("panel %q: %s not coloured: %s", p.Title, col, props)
			}
		}
		for _, want := range map[string][]string{
			"batch_status":     {"status", "last_event_ms", "batch"},
			"open_findings":    {"status", "severity", "raised_ms", "age_s", "batch"},
			"late_deliveries":  {"state", "deadline_ms", "lateness_ms", "resolved_ms", "batch"},
			"boundary_latency": {"p50_ms", "p90_ms", "p99_ms", "max_ms"},
			"freshness":        {"last_ms", "age_s"},
		}[name] {
			if formatted[want] == "" {
				t.Errorf("panel %q: column %s has no format", p.Title, want)
			}
		}
		if series && p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("time series %q has no unit", p.Title)
		}
	}
	for _, v := range f.Templating.List {
		if v.Type == "query" {
			name, ok := sqlOf[v.Query]
			if !ok || v.Name != "pipeline" || name != "pipelines" || v.AllValue != "''" {
				t.Errorf("variable %s: query %q (all value %q), want the pipelines query with all as ''", v.Name, name, v.AllValue)
			}
			used[name]++
		}
	}
	for _, q := range dash.Queries() {
		if used[q.Name] != 1 {
			t.Errorf("query %s is on the dashboard %d times, want once", q.Name, used[q.Name])
		}
	}
	for _, ts := range []string{"breaks_over_time", "lateness_by_day"} {
		found := false
		for _, p := range f.Panels {
			if p.Type == "timeseries" && len(p.Targets) == 1 && sqlOf[p.Targets[0].RawSQL] == ts {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is not a time series panel", ts)
		}
	}
}

// TestDemoNote: the default range is relative, and the note links to the
// demo's dates and database.
func TestDemoNote(t *testing.T) {
	f := load(t)
	if f.Time.From != "now-90d" || f.Time.To != "now" {
		t.Errorf("default range %s..%s", f.Time.From, f.Time.To)
	}
	var note string
	for _, p := range f.Panels {
		if p.Type == "text" {
			note = p.Options.Content
		}
	}
	for _, want := range []string{"2026-09-28..2026-10-02", "from=1790553600000", "to=1790985600000", "var-database=handoff_demo"} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	var serve bool
	for _, l := range f.Links {
		serve = serve || strings.HasPrefix(l.URL, "${serve_url}/")
	}
	if !serve {
		t.Errorf("no dashboard link to handoff serve: %+v", f.Links)
	}
}

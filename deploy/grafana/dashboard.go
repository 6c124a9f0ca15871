package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/text"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/handoff-dev/handoff/query/dash"
)

// The ClickHouse data source plugin, and the import input that asks for
// one of its data sources.
const (
	pluginID   = "grafana-clickhouse-datasource"
	pluginName = "ClickHouse"
	dsInput    = "DS_CLICKHOUSE"
)

// The demo's business dates (deploy/demo) are 2026-09-28..2026-10-02: the
// note links to that range and the demo's database.
const (
	demoFromMS = 1790553600000 // 2026-09-28T00:00:00Z
	demoToMS   = 1790985600000 // 2026-10-03T00:00:00Z: the range ends as 2026-10-02 ends
	demoDB     = "handoff_demo"
)

// Every panel and the pipeline variable read through the datasource
// variable, whose default is the data source chosen at import.
var ds = common.DataSourceRef{Type: cog.ToPtr(pluginID), Uid: cog.ToPtr("${datasource}")}

// chQuery is a target of the ClickHouse plugin (v4): raw SQL, as a table or
// a time series (queryType timeSeries, format 0: the plugin turns long rows,
// a time column, label strings and a number, into one series per label).
// The SDK has no type for this plugin's queries.
type chQuery struct {
	RefID      string               `json:"refId"`
	Datasource common.DataSourceRef `json:"datasource"`
	EditorType string               `json:"editorType"`
	QueryType  string               `json:"queryType"`
	Format     int                  `json:"format"`
	RawSQL     string               `json:"rawSql"`
}

func (chQuery) ImplementsDataqueryVariant() {}
func (chQuery) DataqueryType() string       { return pluginID }
func (q chQuery) Validate() error {
	if q.RawSQL == "" {
		return fmt.Errorf("query %s: no SQL", q.RefID)
	}
	return nil
}
func (q chQuery) Equals(other variants.Dataquery) bool {
	o, ok := other.(chQuery)
	return ok && o == q
}

// chQueryBuilder makes a chQuery a cog.Builder for the panels' targets.
type chQueryBuilder struct{ q chQuery }

func (b chQueryBuilder) Build() (variants.Dataquery, error) { return b.q, b.q.Validate() }

// The plugin's formats.
const (
	formatTimeSeries = 0
	formatTable      = 1
)

// target is query name's panel SQL (dash.GrafanaSQL) as a target.
func target(name string, timeSeries bool) (chQueryBuilder, error) {
	sql, err := dash.GrafanaSQL(name)
	if err != nil {
		return chQueryBuilder{}, err
	}
	q := chQuery{RefID: "A", Datasource: ds, EditorType: "sql", QueryType: "table", Format: formatTable, RawSQL: sql}
	if timeSeries {
		q.QueryType, q.Format = "timeSeries", formatTimeSeries
	}
	return chQueryBuilder{q}, nil
}

// query returns the named query's description from query/dash.
func query(name string) (dash.Query, error) {
	for _, q := range dash.Queries() {
		if q.Name == name {
			return q, nil
		}
	}
	return dash.Query{}, fmt.Errorf("panel for query %q: %w", name, dash.ErrUnknownQuery)
}

func description(q dash.Query) string {
	return q.Doc + " (query " + q.Name + " in query/dash; docs/dashboards.md)"
}

// colors maps a column's values to display colours.
type colors map[string]string

// valueMapping maps each value to itself in its colour, in the order given.
func valueMapping(order []string, c colors) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, v := range order {
		opts[v] = dashboard.ValueMappingResult{Text: cog.ToPtr(v), Color: cog.ToPtr(c[v]), Index: cog.ToPtr(int32(i))}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

// The colours of statuses, states and severities.
var (
	statusOrder  = []string{"delivered", "in_progress", "late", "failed", "broken"}
	statusColors = colors{"delivered": "green", "in_progress": "blue", "late": "orange", "failed": "red", "broken": "purple"}
	stateOrder   = []string{"open", "resolved"}
	stateColors  = colors{"open": "red", "resolved": "green"}
	sevOrder     = []string{"critical", "warning", "info"}
	sevColors    = colors{"critical": "red", "warning": "orange", "info": "blue"}
)

// dataLink is a link on a table cell (Grafana's data link).
type dataLink struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	TargetBlank bool   `json:"targetBlank"`
}

// batchLink opens the batch page of handoff serve for a column holding
// pipeline/date/id.
func batchLink(column string) dataLink {
	return dataLink{Title: "batch page (handoff serve)", URL: "${serve_url}/batches/${__data.fields." + column + "}", TargetBlank: true}
}

// Column formats, as field overrides.
func colored(order []string, c colors) []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{
		{Id: "custom.cellOptions", Value: map[string]string{"type": "color-background", "mode": "basic"}},
		{Id: "mappings", Value: valueMapping(order, c)},
	}
}

// timeMS is a Unix millisecond time, 0 shown as never.
func timeMS(zero string) []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{
		{Id: "unit", Value: units.DatetimeISO},
		{Id: "mappings", Value: []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
			Type: dashboard.MappingTypeValueToText, Options: map[string]dashboard.ValueMappingResult{"0": {Text: cog.ToPtr(zero), Index: cog.ToPtr(int32(0))}}}}}},
	}
}

func unit(u string) []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{{Id: "unit", Value: u}}
}

func links(l ...dataLink) []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{{Id: "links", Value: l}}
}

// column is one formatted column of a table panel.
type column struct {
	name  string
	props []dashboard.DynamicConfigValue
}

// tablePanel is the named query as a table, with its columns formatted.
func tablePanel(name string, pos dashboard.GridPos, cols ...column) (*table.PanelBuilder, error) {
	q, err := query(name)
	if err != nil {
		return nil, err
	}
	t, err := target(name, false)
	if err != nil {
		return nil, err
	}
	p := table.NewPanelBuilder().Title(q.Title).Description(description(q)).Datasource(ds).
		WithTarget(t).GridPos(pos).Filterable(true)
	for _, c := range cols {
		p.OverrideByName(c.name, c.props)
	}
	return p, nil
}

// seriesPanel is the named query as daily bars, one series per label
// (the plugin turns the long rows into one series per label value),
// stacked when the values add up (counts), side by side when not (maxima).
func seriesPanel(name string, pos dashboard.GridPos, u, displayName string, stack common.StackingMode) (*timeseries.PanelBuilder, error) {
	q, err := query(name)
	if err != nil {
		return nil, err
	}
	t, err := target(name, true)
	if err != nil {
		return nil, err
	}
	return timeseries.NewPanelBuilder().Title(q.Title).Description(description(q)).Datasource(ds).
		WithTarget(t).GridPos(pos).Unit(u).Min(0).DisplayName(displayName).
		DrawStyle(common.GraphDrawStyleBars).FillOpacity(80).LineWidth(1).
		Stacking(common.NewStackingConfigBuilder().Mode(stack)).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).ShowLegend(true)), nil
}

func grid(x, y, w, h uint32) dashboard.GridPos { return dashboard.GridPos{X: x, Y: y, W: w, H: h} }

// note is the text panel at the top: what the dashboard reads and where
// the demo's data are.
func note() *text.PanelBuilder {
	content := fmt.Sprintf(`**handoff: delivery history.** Each panel is one of handoff's dashboard queries (docs/dashboards.md); times are UTC.
Pick the **database** handoff writes (default `+"`handoff`"+`) and a **pipeline** (all by default); **serve_url** is where `+"`handoff serve`"+` answers, for the links to batch pages.

**Demo data** (`+"`make demo`"+`): database `+"`%s`"+`, business dates 2026-09-28..2026-10-02, older than the default range of the last 90 days once the demo is a quarter old:
[open the demo's range](/d/handoff-delivery/handoff?from=%d&to=%d&var-database=%s).`, demoDB, demoFromMS, demoToMS, demoDB)
	return text.NewPanelBuilder().Title("About this dashboard").Mode(text.TextModeMarkdown).Content(content).
		GridPos(grid(0, 0, 24, 4))
}

func variables() ([]cog.Builder[dashboard.VariableModel], error) {
	pipelines, err := dash.GrafanaSQL("pipelines")
	if err != nil {
		return nil, err
	}
	opt := func(s string) dashboard.VariableOption {
		return dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr(s)}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr(s)}}
	}
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder("datasource").Label("ClickHouse").Type(pluginID).
			Current(opt("${" + dsInput + "}")),
		dashboard.NewTextBoxVariableBuilder("database").Label("database").DefaultValue(dashboard.StringOrMap{String: cog.ToPtr("handoff")}).
			Current(opt("handoff")).Description("the ClickHouse database handoff writes (the demo: " + demoDB + ")"),
		// All is '' (all pipelines to the queries): a custom all value is put
		// in as it is, not quoted by :sqlstring.
		dashboard.NewQueryVariableBuilder("pipeline").Label("pipeline").Datasource(ds).
			Query(dashboard.StringOrMap{String: cog.ToPtr(pipelines)}).Definition(pipelines).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
			IncludeAll(true).AllValue("''").Current(dashboard.VariableOption{
			Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("All")}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")}}),
		dashboard.NewTextBoxVariableBuilder("serve_url").Label("serve URL").
			DefaultValue(dashboard.StringOrMap{String: cog.ToPtr("http://127.0.0.1:8080")}).Current(opt("http://127.0.0.1:8080")).
			Description("where handoff serve answers (its --addr), for the links to batch pages"),
	}, nil
}

// build is the dashboard, typed.
func build() (dashboard.Dashboard, error) {
	b := dashboard.NewDashboardBuilder("handoff: delivery history").Uid("handoff-delivery").
		Description("handoff's dashboard queries (query/dash, docs/dashboards.md). Generated by go run ./deploy/grafana: edit the program or the queries, not this file.").
		Tags([]string{"handoff"}).Timezone("utc").Editable().Refresh("1m").Time("now-90d", "now").
		Link(dashboard.NewDashboardLinkBuilder("handoff serve").Type(dashboard.DashboardLinkTypeLink).
			Url("${serve_url}/").TargetBlank(true).Icon("external link").Tooltip("the batch grid of handoff serve")).
		Link(dashboard.NewDashboardLinkBuilder("findings (handoff serve)").Type(dashboard.DashboardLinkTypeLink).
			Url("${serve_url}/findings").TargetBlank(true).Icon("external link").Tooltip("open and resolved findings"))
	vars, err := variables()
	if err != nil {
		return dashboard.Dashboard{}, err
	}
	for _, v := range vars {
		b.WithVariable(v)
	}
	b.WithPanel(note())

	type panelFn func() (cog.Builder[dashboard.Panel], error)
	ms, s := unit(units.Milliseconds), unit(units.Seconds)
	panels := []panelFn{
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("batch_status", grid(0, 4, 24, 10),
				column{"status", colored(statusOrder, statusColors)},
				column{"last_event_ms", timeMS("never")},
				column{"batch", links(batchLink("batch"))})
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return seriesPanel("breaks_over_time", grid(0, 14, 12, 9), units.Short,
				"${__field.labels.verdict} (first missing ${__field.labels.first_missing})", common.StackingModeNormal)
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return seriesPanel("lateness_by_day", grid(12, 14, 12, 9), units.Milliseconds, "${__field.labels.pipeline}", common.StackingModeNone)
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("open_findings", grid(0, 23, 12, 9),
				column{"status", colored(statusOrder, statusColors)},
				column{"severity", colored(sevOrder, sevColors)},
				column{"raised_ms", timeMS("never")},
				column{"age_s", s},
				column{"batch", links(batchLink("batch"))})
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("late_deliveries", grid(12, 23, 12, 9),
				column{"state", colored(stateOrder, stateColors)},
				column{"deadline_ms", timeMS("none")},
				column{"lateness_ms", ms},
				column{"resolved_ms", timeMS("not resolved")},
				column{"batch", links(batchLink("batch"))})
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("boundary_funnel", grid(0, 32, 12, 8))
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("boundary_latency", grid(12, 32, 12, 8),
				column{"p50_ms", ms}, column{"p90_ms", ms}, column{"p99_ms", ms}, column{"max_ms", ms})
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("success_not_delivered", grid(0, 40, 12, 8),
				column{"not_delivered_rate", unit(units.PercentUnit)})
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("anomalies_by_kind", grid(12, 40, 12, 8))
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("dead_letters_by_reason", grid(0, 48, 12, 8),
				column{"first_ms", timeMS("never")}, column{"last_ms", timeMS("never")})
		},
		func() (cog.Builder[dashboard.Panel], error) {
			return tablePanel("freshness", grid(12, 48, 12, 8),
				column{"last_ms", timeMS("never")},
				column{"age_s", append(s, dashboard.DynamicConfigValue{Id: "mappings", Value: []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
					Type: dashboard.MappingTypeValueToText, Options: map[string]dashboard.ValueMappingResult{"-1": {Text: cog.ToPtr("never"), Index: cog.ToPtr(int32(0))}}}}}})})
		},
	}
	for _, f := range panels {
		p, err := f()
		if err != nil {
			return dashboard.Dashboard{}, err
		}
		b.WithPanel(p)
	}
	d, err := b.Build()
	if err != nil {
		return dashboard.Dashboard{}, err
	}
	// Stable panel ids, in layout order (Grafana's links and the panel
	// editor address panels by id).
	for i := range d.Panels {
		if p := d.Panels[i].Panel; p != nil {
			p.Id = cog.ToPtr(uint32(i + 1))
		}
	}
	return d, nil
}

// input and require are the export's header: Grafana's import asks for
// each input (the ClickHouse data source) and replaces ${DS_CLICKHOUSE}.
type input struct {
	Name        string `json:"name"`
	Label       string `json:"label"`
	Description string `json:"description"`
	Type        string `json:"type"`
	PluginID    string `json:"pluginId"`
	PluginName  string `json:"pluginName"`
}

type require struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// render is the dashboard file: the export header, then the dashboard as
// the SDK writes it, indented, with a final newline.
func render() ([]byte, error) {
	d, err := build()
	if err != nil {
		return nil, err
	}
	body, err := marshal(d)
	if err != nil {
		return nil, err
	}
	head, err := marshal(struct {
		Inputs   []input   `json:"__inputs"`
		Requires []require `json:"__requires"`
	}{
		Inputs: []input{{Name: dsInput, Label: pluginName, Description: "the ClickHouse that handoff writes",
			Type: "datasource", PluginID: pluginID, PluginName: pluginName}},
		Requires: []require{
			{Type: "grafana", ID: "grafana", Name: "Grafana", Version: ""},
			{Type: "datasource", ID: pluginID, Name: pluginName, Version: "4.0.0"},
			{Type: "panel", ID: "table", Name: "Table", Version: ""},
			{Type: "panel", ID: "text", Name: "Text", Version: ""},
			{Type: "panel", ID: "timeseries", Name: "Time series", Version: ""},
		},
	})
	if err != nil {
		return nil, err
	}
	// Splice the two objects: {head..., body...}.
	joined := append(append(head[:len(head)-1:len(head)-1], ','), body[1:]...)
	var out bytes.Buffer
	if err := json.Indent(&out, joined, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return unescapeHTML(out.Bytes()), nil
}

// unescapeHTML undoes encoding/json's \u003c, \u003e and \u0026 (the SDK
// marshals panels itself, with HTML escaping), so the SQL reads as SQL in
// the file. It walks the escapes, so an escaped backslash before "u003c"
// in a string stays as it was.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// marshal is json.Marshal without HTML escaping (the SQL has < and >).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

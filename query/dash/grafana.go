package dash

import (
	"fmt"
	"strings"
)

// grafanaMarkers is what each marker becomes in a Grafana panel of the
// ClickHouse data source plugin: the time picker for dates (the plugin's
// $__fromTime/$__toTime expand to toDateTime(seconds), which 18.16 has),
// the dashboard variables pipeline and database, and the parameters'
// defaults otherwise.
var grafanaMarkers = map[string]string{
	"from":         "toDate($__fromTime)",
	"to":           "toDate($__toTime)",
	"from_ms":      "(toInt64(toUnixTimestamp($__fromTime)) * 1000)",
	"to_end_ms":    "(toInt64(toUnixTimestamp($__toTime)) * 1000 + 1000)",
	"pipeline":     "${pipeline:sqlstring}",
	"status":       "''",
	"limit":        fmt.Sprint(DefaultLimit),
	"min_age":      "0",
	"min_lateness": "0",
}

// GrafanaSQL is query name's SQL as a panel of deploy/grafana's dashboard
// runs it: the database is the dashboard variable database, the dates the
// time picker's range, the pipeline the variable pipeline (empty: all) and
// every other parameter its default. The panel cannot drift from the query
// the docs and the API describe.
func GrafanaSQL(name string) (string, error) {
	d, ok := lookup(name)
	if !ok {
		return "", fmt.Errorf("grafana panel for %q: %w", name, ErrUnknownQuery)
	}
	var missing string
	sql := d.render("${database:raw}", func(marker string) (string, bool) {
		if strings.Contains(marker, ":") {
			return "", false // a Grafana variable, put in for {db}
		}
		s, ok := grafanaMarkers[marker]
		if !ok && missing == "" {
			missing = marker
		}
		return s, ok
	})
	if missing != "" {
		return "", fmt.Errorf("grafana panel for %q: marker {%s} has no Grafana form (add it to grafanaMarkers)", name, missing)
	}
	return sql, nil
}

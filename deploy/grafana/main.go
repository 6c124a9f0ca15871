// Command grafana writes handoff's Grafana dashboard,
// deploy/grafana/dashboards/handoff.json, from typed Go (the Grafana
// Foundation SDK): every panel's SQL is one of query/dash's named queries
// as a panel runs it (dash.GrafanaSQL), so the dashboard cannot drift from
// the queries docs/dashboards.md documents and `handoff serve` answers.
//
//	go run ./deploy/grafana            # rewrite the file
//	go test ./deploy/grafana           # fails when the file is not what this program writes
//
// The JSON imports through Grafana's UI (its __inputs ask for the
// ClickHouse data source) and loads through file provisioning (the
// datasource variable then picks the ClickHouse data source).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// dashboardFile is where the dashboard lives, from the repository root.
const dashboardFile = "deploy/grafana/dashboards/handoff.json"

func main() {
	out := flag.String("o", dashboardFile, "file to write (the default is relative to the repository root)")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "grafana:", err)
		os.Exit(1)
	}
}

func write(out string) error {
	b, err := render()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Dir(out)); err != nil {
		return fmt.Errorf("write %s: %w (run from the repository root, or pass -o FILE)", out, err)
	}
	return os.WriteFile(out, b, 0o644)
}

package schema_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/store/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestStatementsGolden: the DDL of each layout, as sent to the server, is
// the reviewed text under testdata/ (go test ./store/schema -run Golden
// -update rewrites it; review the diff).
func TestStatementsGolden(t *testing.T) {
	tests := []struct {
		golden string
		layout schema.Layout
	}{
		{"single.sql", schema.Layout{}},
		{"cluster.sql", schema.Layout{Cluster: "handoff_cluster"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			stmts, err := schema.StatementsFor("handoff", tt.layout)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(stmts, "\n;\n\n") + "\n;\n"
			path := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("statements differ from %s (rerun with -update and review the diff):\n%s", path, got)
			}
		})
	}
}

// TestClusterStatements checks the properties of the cluster flavour that
// its guarantees rest on, for every table schema.sql has now or gets later.
func TestClusterStatements(t *testing.T) {
	l := schema.Layout{Cluster: "c1"}
	stmts, err := schema.StatementsFor("h", l)
	if err != nil {
		t.Fatal(err)
	}
	single, _ := schema.Statements("h")
	// one local and one Distributed table per table; the database, the
	// materialized view and the views once each
	if got, want := len(stmts), 2*len(single)-1-len(schema.Views())-1; got != want {
		t.Fatalf("got %d statements, want %d", got, want)
	}
	for _, s := range stmts {
		if !strings.Contains(s, " ON CLUSTER c1") {
			t.Errorf("statement without ON CLUSTER c1: %.60q", s)
		}
		if strings.Contains(s, "ENGINE = ReplacingMergeTree") || strings.Contains(s, "ENGINE = MergeTree") {
			t.Errorf("unreplicated engine in the cluster flavour: %.60q", s)
		}
	}
	for _, table := range []string{schema.Events, schema.EventsByDate, schema.DeadLetters, schema.Diagnoses, schema.Findings} {
		local, dist := find(t, stmts, "h."+table+schema.LocalSuffix+" "), find(t, stmts, "h."+table+" ")
		if !strings.Contains(local, "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/h/"+table+"_local', '{replica}', ") {
			t.Errorf("%s: local table not replicated under {shard}/{replica}:\n%s", table, local)
		}
		if !strings.Contains(local, "PARTITION BY toYYYYMM(") {
			t.Errorf("%s: local table not partitioned by month", table)
		}
		if strings.Contains(dist, "MATERIALIZED") || !strings.Contains(dist, "ENGINE = Distributed(c1, h, "+table+"_local, cityHash64(") {
			t.Errorf("%s: Distributed table wrong:\n%s", table, dist)
		}
		// A row's copies must land on one shard to collapse: the sharding
		// key's columns are the leading columns of the sort key.
		keyCols := between(dist, "cityHash64(", ")")
		order := between(local, "ORDER BY (", ")")
		if table == schema.EventsByDate {
			// The copy of the events shards as the events do (its view
			// writes each block to the local part its events went to):
			// the key's columns are in its sort key, in another order.
			if want := between(find(t, stmts, "h."+schema.Events+" "), "cityHash64(", ")"); keyCols != want {
				t.Errorf("%s: sharding key (%s) is not the events' (%s)", table, keyCols, want)
			}
			for _, c := range strings.Split(keyCols, ", ") {
				if !slices.Contains(strings.Split(order, ", "), c) {
					t.Errorf("%s: sharding key column %s is not in the sort key (%s)", table, c, order)
				}
			}
			continue
		}
		if !strings.HasPrefix(order, keyCols) {
			t.Errorf("%s: sharding key (%s) is not a prefix of the sort key (%s)", table, keyCols, order)
		}
	}
	// The view copies the local parts into the local parts, on every server.
	v := ""
	for _, s := range stmts {
		if strings.HasPrefix(s, "CREATE MATERIALIZED VIEW IF NOT EXISTS h."+schema.EventsByDateView+" ") {
			v = s
		}
	}
	if !strings.Contains(v, " TO h."+schema.EventsByDate+schema.LocalSuffix+" ") || !strings.Contains(v, " FROM h."+schema.Events+schema.LocalSuffix+" ") {
		t.Errorf("the materialized view of %s is not from and to the local parts:\n%s", schema.EventsByDate, v)
	}
	if _, err := schema.StatementsFor("h", schema.Layout{Cluster: "c1 ON CLUSTER x"}); err == nil || !strings.Contains(err.Error(), "cluster name") {
		t.Errorf("bad cluster name: err %v, want one naming the cluster name", err)
	}
	if got := (schema.Layout{}).InsertSettings(); got != nil {
		t.Errorf("single server insert settings %v, want none", got)
	}
	if got := l.InsertSettings()["insert_distributed_sync"]; got != 1 {
		t.Errorf("cluster insert_distributed_sync = %v, want 1", got)
	}
}

func find(t *testing.T, stmts []string, prefix string) string {
	t.Helper()
	for _, s := range stmts {
		if strings.HasPrefix(s, "CREATE TABLE IF NOT EXISTS "+prefix) {
			return s
		}
	}
	t.Fatalf("no CREATE TABLE %s", prefix)
	return ""
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

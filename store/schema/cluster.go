package schema

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// The cluster flavour of the schema (docs/cluster.md). Every table of
// schema.sql becomes two:
//
//   - NAME_local, created ON CLUSTER on every server, with the replicated
//     variant of its engine (ReplicatedReplacingMergeTree), its data in
//     ZooKeeper under /clickhouse/tables/{shard}/DB/NAME_local and the
//     replica named {replica}: the macros of each server's config;
//   - NAME, a Distributed table over NAME_local with a sharding key that
//     keeps one batch's rows on one shard.
//
// Readers and writers keep using NAME, so store/history, query/dash and the
// sinks are the same code for both flavours: a read of one batch's timeline
// goes to every shard but finds rows on one, and a write through NAME is
// routed to the batch's shard. Every sort key starts with the columns of its
// sharding key, so two copies of a row (an event delivered twice, a finding
// record re-published) land on the same shard and collapse there as on a
// single server.

// LocalSuffix ends the name of a table's local (replicated) part in the
// cluster flavour.
const LocalSuffix = "_local"

// shardKeys are the sharding keys of the Distributed tables. Batch tables
// shard by the batch identity (pipeline, business date, batch id); dead letters by their
// source message, the key they collapse on.
var shardKeys = map[string]string{
	Events: "cityHash64(pipeline, business_date, batch_id)",
	// the same shard as the batch's events: a copy's copies collapse there
	EventsByDate: "cityHash64(pipeline, business_date, batch_id)",
	DeadLetters:  "cityHash64(topic, kafka_partition, kafka_offset)",
	Diagnoses:    "cityHash64(pipeline, business_date, batch_id)",
	Findings:     "cityHash64(pipeline, business_date, batch_id)",
}

// Layout says how the tables are laid out on the servers. The zero Layout is
// a single server (today's schema, unchanged).
type Layout struct {
	// Cluster names a cluster of the servers' <remote_servers> config
	// (HANDOFF_CLICKHOUSE_CLUSTER). Non-empty selects the cluster flavour:
	// the servers need ZooKeeper and the macros {shard} and {replica}.
	Cluster string
}

// Clustered reports whether l is the cluster flavour.
func (l Layout) Clustered() bool { return l.Cluster != "" }

// Check validates the cluster name, which goes into SQL unquoted like the
// database name.
func (l Layout) Check() error {
	if l.Cluster == "" {
		return nil
	}
	if len(l.Cluster) > MaxDatabaseLen || !dbName.MatchString(l.Cluster) {
		return fmt.Errorf("clickhouse cluster name %q: use the name of a <remote_servers> entry made of letters, digits and underscores, not starting with a digit", l.Cluster)
	}
	return nil
}

// InsertSettings are the query settings writers must use in this layout.
// Through a Distributed table an INSERT returns, by default, when the rows
// are queued on the local disk of the server that took it; the ingester
// commits Kafka offsets after the INSERT returns, so it must return only
// once every shard has stored its rows (insert_distributed_sync, on 18.16
// and current releases). nil for a single server.
func (l Layout) InsertSettings() map[string]any {
	if !l.Clustered() {
		return nil
	}
	return map[string]any{"insert_distributed_sync": 1}
}

// Tables returns the names of every table and view Ensure creates in this
// layout, in creation order.
func (l Layout) Tables() []string {
	if !l.Clustered() {
		return AllTables()
	}
	var out []string
	for _, t := range []string{Events, EventsByDate, DeadLetters, Diagnoses, Findings} {
		out = append(out, t+LocalSuffix, t)
	}
	return append(append(out, EventsByDateView, EventsByDateCopied), Views()...)
}

// createTable matches a CREATE TABLE of schema.sql: name, column list,
// engine, engine arguments, and the rest (PARTITION BY, ORDER BY).
var createTable = regexp.MustCompile(`(?s)^CREATE TABLE IF NOT EXISTS \{db\}\.(\w+) \((.*)\n\) ENGINE = (\w*MergeTree)\(([^)]*)\)\n(.*)$`)

// materialized matches the MATERIALIZED keyword of a column definition.
var materialized = regexp.MustCompile(`(\s)MATERIALIZED(\s)`)

// clusterStatements turns the single-server statements of schema.sql (with
// {db} not yet replaced) into the cluster flavour's.
func clusterStatements(stmts []string, cluster string) ([]string, error) {
	var out []string
	for _, s := range stmts {
		if strings.HasPrefix(s, "CREATE DATABASE IF NOT EXISTS {db}") && !strings.Contains(s, "\n") {
			out = append(out, s+" ON CLUSTER "+cluster)
			continue
		}
		m := createTable.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("schema.sql: statement %.40q... is neither CREATE DATABASE nor a CREATE TABLE ... ENGINE = *MergeTree(...) the cluster flavour can replicate", s)
		}
		name, cols, engine, args, rest := m[1], m[2], m[3], m[4], m[5]
		key, ok := shardKeys[name]
		if !ok {
			return nil, fmt.Errorf("schema.sql: table %s has no sharding key for the cluster flavour (add it to shardKeys in store/schema/cluster.go)", name)
		}
		local := name + LocalSuffix
		rargs := "'/clickhouse/tables/{shard}/{db}/" + local + "', '{replica}'"
		if strings.TrimSpace(args) != "" {
			rargs += ", " + args
		}
		out = append(out,
			"CREATE TABLE IF NOT EXISTS {db}."+local+" ON CLUSTER "+cluster+" ("+cols+"\n) ENGINE = Replicated"+engine+"("+rargs+")\n"+rest,
			// The Distributed table's derived columns are ALIAS, not
			// MATERIALIZED: an INSERT through it names the stored columns
			// only, and a read of a derived column is computed from them.
			"CREATE TABLE IF NOT EXISTS {db}."+name+" ON CLUSTER "+cluster+" ("+materialized.ReplaceAllString(cols, "${1}ALIAS${2}")+
				"\n) ENGINE = Distributed("+cluster+", {db}, "+local+", "+key+")")
	}
	return out, nil
}

// StatementsFor returns the schema's statements for database db in layout
// l, in order: Statements(db) for a single server.
func StatementsFor(db string, l Layout) ([]string, error) {
	if err := CheckDatabase(db); err != nil {
		return nil, err
	}
	if err := l.Check(); err != nil {
		return nil, err
	}
	stmts := tableStatements()
	if l.Clustered() {
		var err error
		if stmts, err = clusterStatements(stmts, l.Cluster); err != nil {
			return nil, err
		}
	}
	for i, s := range stmts {
		stmts[i] = strings.ReplaceAll(s, "{db}", db)
	}
	on := ""
	if l.Clustered() {
		on = " ON CLUSTER " + l.Cluster
	}
	stmts = append(stmts, byDateViewStatement(db, l))
	return append(stmts, viewStatements(db, on)...), nil
}

// EnsureLayout is Ensure in layout l: it creates what is missing and adds
// to existing tables the columns this release has and they lack
// (upgrade.go). In the cluster flavour the DDL runs
// ON CLUSTER, which waits for every server (distributed_ddl_task_timeout):
// so that an ingester can start while one replica is down, nothing is sent
// when every table and view already exists, with every column, on the
// server conn talks to.
func EnsureLayout(ctx context.Context, conn driver.Conn, db string, l Layout) error {
	stmts, err := StatementsFor(db, l)
	if err != nil {
		return err
	}
	copied, err := hasByDateCopied(ctx, conn, db)
	if err != nil {
		return err
	}
	if l.Clustered() && copied {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND has(?, name)", db, l.Tables()).Scan(&n); err != nil {
			return fmt.Errorf("clickhouse schema: list the tables of %s: %w", db, err)
		}
		if n == uint64(len(l.Tables())) {
			return upgrade(ctx, conn, db, l)
		}
	}
	// Tables made by an earlier release get this one's columns before any
	// view reads them (upgrade.go): the views come last.
	views := len(stmts) - len(Views())
	byDate := byDateViewStatement(db, l)
	for i, s := range stmts {
		if i == views {
			if err := upgrade(ctx, conn, db, l); err != nil {
				return err
			}
		}
		if err := conn.Exec(ctx, s); err != nil {
			first := s
			if i := strings.IndexByte(first, '('); i > 0 {
				first = first[:i]
			}
			hint := "check that the user may create databases and tables"
			if l.Clustered() {
				hint += ", that cluster " + l.Cluster + " is in every server's <remote_servers>, that ZooKeeper is up and that each server defines the macros {shard} and {replica}"
			}
			return fmt.Errorf("clickhouse schema: %s: %w (%s)", strings.TrimSpace(first), err, hint)
		}
		if s == byDate && !copied {
			if err := copyByDate(ctx, conn, db, l); err != nil {
				return err
			}
		}
	}
	return nil
}

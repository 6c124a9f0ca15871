//go:build cluster

// Package cluster_test runs against the local cluster of cluster.sh (make
// cluster-test; not part of make test, which has no cluster): ZooKeeper,
// three Kafka brokers, ClickHouse as two shards of two replicas, two
// ingesters and two detectors, all started by `make cluster`.
package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// env is the local cluster as cluster.sh describes it in cluster.env.
type env struct {
	dir, script, db string
	brokers         []string
	servers         []string // ch1..ch4: shard 1 = 0, 1; shard 2 = 2, 3
	layout          schema.Layout
}

func clusterEnv(t *testing.T) env {
	t.Helper()
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			t.Fatalf("%s is not set: start the local cluster with `make cluster` and load $HANDOFF_DATA_DIR/cluster/cluster.env (make cluster-test does both)", name)
		}
		return v
	}
	return env{
		dir:     get("HANDOFF_CLUSTER_DIR"),
		script:  get("HANDOFF_CLUSTER_SCRIPT"),
		db:      get("HANDOFF_CLUSTER_DATABASE"),
		brokers: strings.Split(get("HANDOFF_CLUSTER_KAFKA_BROKERS"), ","),
		servers: strings.Split(get("HANDOFF_CLUSTER_CLICKHOUSE_ADDRS"), ","),
		layout:  schema.Layout{Cluster: get("HANDOFF_CLUSTER_CLICKHOUSE_CLUSTER")},
	}
}

func open(t *testing.T, addr string) driver.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := chconn.Open(ctx, chconn.Config{Addr: addr})
	if err != nil {
		t.Fatalf("ClickHouse server %s of the local cluster: %v (is `make cluster` up? deploy/cluster/cluster.sh status)", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func count(t *testing.T, conn driver.Conn, q string, args ...any) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n uint64
	if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestSchemaOnEveryServer: the ingesters created the cluster flavour on all
// four servers: replicated local tables and Distributed tables of the same
// names the single-server schema has.
func TestSchemaOnEveryServer(t *testing.T) {
	e := clusterEnv(t)
	for _, addr := range e.servers {
		conn := open(t, addr)
		for _, table := range e.layout.Tables() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var engine string
			err := conn.QueryRow(ctx, "SELECT engine FROM system.tables WHERE database = ? AND name = ?", e.db, table).Scan(&engine)
			cancel()
			if err != nil {
				t.Errorf("%s: table %s.%s: %v", addr, e.db, table, err)
				continue
			}
			want := "View"
			switch {
			case strings.HasSuffix(table, schema.LocalSuffix):
				want = "ReplicatedReplacingMergeTree"
			case !slices.Contains(schema.Views(), table):
				want = "Distributed"
			}
			if engine != want {
				t.Errorf("%s: %s.%s has engine %s, want %s", addr, e.db, table, engine, want)
			}
		}
	}
}

// TestDistributedReadEqualsSingleServer: events emitted to the cluster's
// Kafka are stored once each (uniqExact and count through the Distributed
// table), every batch's events sit on one shard, the replicas of a shard
// agree, and `handoff diagnose` reading through the Distributed table gives
// the same JSON as reading the same events from the single server.
func TestDistributedReadEqualsSingleServer(t *testing.T) {
	e := clusterEnv(t)
	single := testenv.ClickHouse(t)
	pipeline := testenv.Name("cluster-eq")
	events := testenv.Events(20000, pipeline, 7)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	em, err := emit.New(emit.Config{Brokers: e.brokers, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	start := time.Now()
	if err := em.Send(ctx, events); err != nil {
		t.Fatalf("emit to the cluster: %v", err)
	}

	db := testenv.Database(t, single, "cluster_eq")
	if err := schema.Ensure(ctx, single, db); err != nil {
		t.Fatal(err)
	}
	sk, err := writer.New(single, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := sk.Events(ctx, events); err != nil {
		t.Fatal(err)
	}

	dist := open(t, e.servers[0])
	want := uint64(len(events))
	testenv.Eventually(t, 3*time.Minute, "every event stored in the cluster", func() (bool, string) {
		n := count(t, dist, "SELECT uniqExact(event_id) FROM "+e.db+".events WHERE pipeline = ?", pipeline)
		return n == want, fmt.Sprintf("%d of %d distinct events", n, want)
	})
	t.Logf("%d events emitted and stored by 2 ingesters in %s", want, time.Since(start).Round(time.Millisecond))
	// Copies of an event are allowed until a merge collapses them (at
	// least once: an ingester that loses a partition in a rebalance may
	// have stored what the next one stores again; reads skip copies). Two
	// ingesters starting together rebalance while these events arrive.
	if n := count(t, dist, "SELECT count() FROM "+e.db+".events WHERE pipeline = ?", pipeline); n < want {
		t.Errorf("count() through the Distributed table = %d, fewer rows than the %d distinct events", n, want)
	} else {
		t.Logf("%d rows for %d events: %d copies of redelivered events, not merged yet", n, want, n-want)
	}

	// Replicas of a shard converge on the same rows; the shards' batches
	// are disjoint.
	batches := make([]uint64, 2)
	for shard := 0; shard < 2; shard++ {
		a, b := open(t, e.servers[2*shard]), open(t, e.servers[2*shard+1])
		q := "SELECT count() FROM " + e.db + ".events" + schema.LocalSuffix + " WHERE pipeline = ?"
		testenv.Eventually(t, time.Minute, fmt.Sprintf("replicas of shard %d agree", shard+1), func() (bool, string) {
			na, nb := count(t, a, q, pipeline), count(t, b, q, pipeline)
			return na == nb, fmt.Sprintf("%d and %d rows", na, nb)
		})
		batches[shard] = count(t, a, "SELECT uniqExact(business_date, batch_id) FROM "+e.db+".events"+schema.LocalSuffix+" WHERE pipeline = ?", pipeline)
	}
	total := count(t, dist, "SELECT uniqExact(business_date, batch_id) FROM "+e.db+".events WHERE pipeline = ?", pipeline)
	if batches[0]+batches[1] != total || batches[0] == 0 || batches[1] == 0 {
		t.Errorf("batches per shard %v, %d in all: want every batch on exactly one shard and both shards used", batches, total)
	}

	bin := filepath.Join(e.dir, "bin", "handoff")
	diagnose := func(addr, db string) []byte {
		cmd := exec.CommandContext(ctx, bin, "diagnose", "--clickhouse-addr", addr, "--clickhouse-database", db, "--pipeline", pipeline,
			"--as-of", "2026-10-10T00:00:00Z", "--format", "json")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) { // 1: some batch not delivered
			t.Fatalf("%s: %v\n%s", cmd, err, errOut.String())
		}
		return out.Bytes()
	}
	got, ref := diagnose(e.servers[3], e.db), diagnose(os.Getenv("HANDOFF_CLICKHOUSE_ADDR"), db)
	if len(ref) == 0 || !bytes.Equal(got, ref) {
		t.Errorf("diagnoses through the Distributed table (%d bytes) differ from the single server's (%d bytes)", len(got), len(ref))
	}
}

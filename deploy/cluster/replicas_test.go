//go:build cluster

package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/replicas"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// TestHistoryReadsEveryAcknowledgedRow: rows acknowledged by ch2 that its
// replica ch1 has not fetched (fetches stopped on ch1) are missing from
// ch1, the replica a Distributed read may pick; the detector's cluster
// history (store/replicas) cannot synchronise ch1, moves to ch2 and reads
// every row.
func TestHistoryReadsEveryAcknowledgedRow(t *testing.T) {
	e := clusterEnv(t)
	ch1, ch2 := open(t, e.servers[0]), open(t, e.servers[1])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	local := e.db + "." + schema.Events + schema.LocalSuffix
	if err := ch1.Exec(ctx, "SYSTEM STOP FETCHES "+local); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ch1.Exec(context.Background(), "SYSTEM START FETCHES "+local); err != nil {
			t.Errorf("ch1 fetches not started again: %v; run: clickhouse-client --port 26001 -q 'SYSTEM START FETCHES %s'", err, local)
		}
	})

	prefix := testenv.Name("cluster-replicas")
	events := testenv.Events(500, prefix, 3)
	var b schema.EventBatch
	now := time.Now().UnixMilli()
	for i := range events {
		// One pipeline, batch events only: all on shard 1 once written to
		// ch2's local table; partition 0 of the topic for the read.
		events[i].Pipeline = prefix
		b.Add(&events[i], schema.Source{Topic: "cluster-replicas", Partition: 0, Offset: int64(i)}, now)
	}
	s, err := writer.New(ch2, e.db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InsertColumns(ctx, schema.Events+schema.LocalSuffix, schema.EventColumns, b.Columns()); err != nil {
		t.Fatal(err)
	}
	want := count(t, ch2, "SELECT uniqExact(event_id) FROM "+local+" WHERE pipeline = ?", prefix)
	if got := count(t, ch1, "SELECT uniqExact(event_id) FROM "+local+" WHERE pipeline = ?", prefix); got >= want || want == 0 {
		t.Fatalf("ch1 holds %d of ch2's %d events with its fetches stopped: the scenario needs ch1 behind", got, want)
	}

	conn := open(t, e.servers[0])
	set, err := replicas.New(conn, chconn.Config{}, e.layout.Cluster, e.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	set.SyncTimeout = 3 * time.Second
	st, err := history.New(conn, e.db)
	if err != nil {
		t.Fatal(err)
	}
	h := live.ClusterHistory{Replicas: set, Store: st}
	ids := map[string]bool{}
	err = h.PartitionEvents(ctx, "cluster-replicas", []int{0}, model.MustParseDate("1970-01-02"), func(ev *model.Event) error {
		if ev.Pipeline == prefix {
			ids[ev.ID] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(ids)) != want {
		t.Fatalf("the cluster history read %d distinct events of %s, want the %d acknowledged by ch2", len(ids), prefix, want)
	}
}

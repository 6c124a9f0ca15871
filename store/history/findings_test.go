package history_test

import (
	"hash/fnv"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/schema"
)

// TestFindingsByPartition: Store.Findings given partitions sends, from a
// table that stores each record's events partition, only the findings
// of those partitions; from a table of an earlier release (no partition
// columns) it sends every finding, and keep alone selects.
func TestFindingsByPartition(t *testing.T) {
	ctx, conn, db, sink := newDatabase(t, "history_findings")
	set, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	events := testenv.RecentEvents(2000, "history.findings", 40, now)
	for i := range events {
		d.Observe(&events[i])
	}
	// Any partitioner will do: the store only compares the numbers.
	partition := func(k model.BatchKey) int {
		h := fnv.New32a()
		h.Write([]byte(k.String()))
		return int(h.Sum32() % 6)
	}
	taken := func(k model.BatchKey) bool { return partition(k) < 3 }
	var rows schema.FindingRows
	all, ours := map[string]bool{}, map[string]bool{}
	d.AdvanceEach(now, now, func(f *detect.Finding) {
		r := schema.FindingRowOf(f)
		r.EventsPartition, r.EventsPartitions = int32(partition(f.Batch)), 6
		rows.Add(r, schema.Source{Topic: "findings", Offset: int64(rows.Len())}, now.UnixMilli())
		all[f.Fingerprint] = true
		if taken(f.Batch) {
			ours[f.Fingerprint] = true
		}
	})
	if len(ours) == 0 || len(ours) == len(all) {
		t.Fatalf("%d of %d findings of the partitions taken: want some, not all", len(ours), len(all))
	}
	if err := sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}
	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	from := model.MustParseDate(now.Format(time.DateOnly)).AddDays(-detect.DefaultRetain)
	ps := history.EventsPartitions{Take: []int{0, 1, 2}, Count: 6}
	read := func(keep func(model.BatchKey) bool) map[string]bool {
		got := map[string]bool{}
		if err := st.Findings(ctx, from, ps, keep, func(f *detect.Finding) error {
			got[f.Fingerprint] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	same := func(what string, got, want map[string]bool) {
		t.Helper()
		n := 0
		for fp := range want {
			if got[fp] {
				n++
			}
		}
		if n != len(want) || len(got) != len(want) {
			t.Errorf("%s: %d findings read, %d of the %d wanted", what, len(got), n, len(want))
		}
	}
	same("the server's selection", read(nil), ours)

	if err := conn.Exec(ctx, "ALTER TABLE "+db+"."+schema.Findings+" DROP COLUMN events_partition, DROP COLUMN events_partitions"); err != nil {
		t.Fatal(err)
	}
	same("from a table without the partition columns", read(nil), all)
	same("from a table without the partition columns, with keep", read(taken), ours)
}

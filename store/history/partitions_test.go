package history_test

import (
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/schema"
)

// TestPartitionEventsHeartbeatsBeforeWindow: the detector's restore reads
// the heartbeats of its window and, before them, the latest heartbeat of
// each process stamped before the window, however old, as diagnose
// counts it (a process that last beat before the retention window fell
// out of alive); other partitions' and older beats are not read.
func TestPartitionEventsHeartbeatsBeforeWindow(t *testing.T) {
	ctx, conn, db, s := newDatabase(t, "partitions_test")
	hb := func(id, component string, at string, partition int) (model.Event, schema.Source) {
		ts, _ := time.Parse(time.RFC3339, at)
		return model.Event{Spec: model.SpecV1, ID: id, Type: model.ProcessHeartbeat, Time: ts, Pipeline: "p.daily",
			System: model.Consumer, Component: component}, schema.Source{Topic: "events", Partition: int32(partition), Offset: 1}
	}
	var b schema.EventBatch
	for _, x := range []struct {
		id, component, at string
		partition         int
	}{
		{"old-a-1", "a", "2026-06-01T00:00:00Z", 0},
		{"old-a-2", "a", "2026-06-02T00:00:00Z", 0}, // a's latest before the window
		{"old-b", "b", "2026-07-01T00:00:00Z", 1},   // another partition
		{"new-a", "a", "2026-09-20T00:00:00Z", 0},   // in the window
		{"old-c", "c", "2026-05-01T00:00:00Z", 0},   // c's only beat
	} {
		e, src := hb(x.id, x.component, x.at, x.partition)
		b.Add(&e, src, 1)
	}
	if err := s.InsertEvents(ctx, &b); err != nil {
		t.Fatal(err)
	}
	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := st.PartitionEvents(ctx, "events", []int{0}, model.MustParseDate("2026-09-01"), func(e *model.Event) error {
		got = append(got, e.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := "old-a-2 old-c new-a"; strings.Join(got, " ") != want {
		t.Errorf("restored heartbeats %v, want %s", got, want)
	}
}

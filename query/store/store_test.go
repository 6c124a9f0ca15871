package store_test

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/ingest/sink"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/store"
)

func TestStoreRoundTrip(t *testing.T) {
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "store_test")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	s, err := sink.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	events := testenv.Events(3000, "pipe.roundtrip", 1)
	// Insert everything twice, in two different orders: reads must show
	// each event once.
	if err := s.Events(ctx, events); err != nil {
		t.Fatal(err)
	}
	rev := append([]model.Event(nil), events...)
	sort.Slice(rev, func(i, j int) bool { return rev[i].ID > rev[j].ID })
	if err := s.Events(ctx, rev); err != nil {
		t.Fatal(err)
	}
	// Another pipeline must not leak into reads, even one whose name
	// would break out of a quoted string if it were pasted into SQL.
	const hostile = `pipe.roundtrip' OR 1=1 -- \'; "x"`
	hostileEvents := testenv.Events(50, hostile, 2)
	if err := s.Events(ctx, append(testenv.Events(50, "pipe.other", 2), hostileEvents...)); err != nil {
		t.Fatal(err)
	}

	st, err := store.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Events(ctx, store.Filter{Pipeline: "pipe.roundtrip", Heartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got, events)
	assertSortKeyOrder(t, got)
	back, err := st.Events(ctx, store.Filter{Pipeline: hostile, Heartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, back, hostileEvents)

	// Read in windows of a few rows (each inserted twice): the same events
	// in the same order, each once, however the range is cut.
	small, err := store.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	small.WindowRows = 7
	windowed, err := small.Events(ctx, store.Filter{Pipeline: "pipe.roundtrip", Heartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(windowed, got) {
		t.Fatalf("windowed read differs from the single read (%d vs %d events)", len(windowed), len(got))
	}

	// Without heartbeats.
	var noHB []model.Event
	for _, e := range events {
		if e.Type.HasBatch() {
			noHB = append(noHB, e)
		}
	}
	got, err = st.Events(ctx, store.Filter{Pipeline: "pipe.roundtrip"})
	if err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got, noHB)

	// One batch.
	key := events[0].Key()
	if key.IsZero() {
		key = noHB[0].Key()
	}
	var want []model.Event
	for _, e := range events {
		if e.Key() == key && e.Type.HasBatch() {
			want = append(want, e)
		}
	}
	got, err = st.Events(ctx, store.Filter{Batch: &key})
	if err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got, want)

	// A date range.
	from, to := model.MustParseDate("2026-08-10"), model.MustParseDate("2026-08-12")
	want = want[:0]
	for _, e := range noHB {
		if e.BusinessDate.Compare(from) >= 0 && e.BusinessDate.Compare(to) <= 0 {
			want = append(want, e)
		}
	}
	got, err = st.Events(ctx, store.Filter{Pipeline: "pipe.roundtrip", From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got, want)
}

// assertSortKeyOrder checks the order of Events: heartbeats first (by
// UTC day, then event id), then batch events by business date, batch id
// and event id. The fold of diagnose and backfill relies on a batch's
// events being consecutive and batches coming in key order.
func assertSortKeyOrder(t *testing.T, got []model.Event) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		var c int
		switch ha, hb := !a.Type.HasBatch(), !b.Type.HasBatch(); {
		case ha && hb:
			c = strings.Compare(a.Time.Format(time.DateOnly), b.Time.Format(time.DateOnly))
		case ha:
			c = -1
		case hb:
			c = 1
		default:
			c = a.BusinessDate.Compare(b.BusinessDate)
			if c == 0 {
				c = strings.Compare(a.BatchID, b.BatchID)
			}
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if c >= 0 {
			t.Fatalf("events %d and %d out of order: %s %s/%s/%s then %s %s/%s/%s", i-1, i, a.Type, a.BusinessDate, a.BatchID, a.ID, b.Type, b.BusinessDate, b.BatchID, b.ID)
		}
	}
}

func assertSameSet(t *testing.T, got, want []model.Event) {
	t.Helper()
	byID := make(map[string]model.Event, len(want))
	for _, e := range want {
		byID[e.ID] = e
	}
	seen := make(map[string]bool, len(got))
	for _, g := range got {
		if seen[g.ID] {
			t.Fatalf("event %s read twice", g.ID)
		}
		seen[g.ID] = true
		w, ok := byID[g.ID]
		if !ok {
			t.Fatalf("unexpected event %s read back", g.ID)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("event %s differs:\n got %#v\nwant %#v", g.ID, g, w)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("read %d events, want %d", len(got), len(want))
	}
}

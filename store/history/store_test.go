package history_test

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/storetest"
	"github.com/handoff-dev/handoff/store/writer"
)

func TestStoreRoundTrip(t *testing.T) {
	ctx, conn, db, s := newDatabase(t, "store_test")
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

	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Events(ctx, history.Filter{Pipeline: "pipe.roundtrip", Heartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got, events)
	assertSortKeyOrder(t, got)
	back, err := st.Events(ctx, history.Filter{Pipeline: hostile, Heartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, back, hostileEvents)

	// Read in windows of a few rows (each inserted twice): the same events
	// in the same order, each once, however the range is cut.
	small, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	small.WindowRows = 7
	windowed, err := small.Events(ctx, history.Filter{Pipeline: "pipe.roundtrip", Heartbeats: true})
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
	got, err = st.Events(ctx, history.Filter{Pipeline: "pipe.roundtrip"})
	if err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got, noHB)

	// A Small read (one query of a window's rows, then windows for the
	// rest): the same events in the same order as the windowed read,
	// each once, wherever the first query's limit falls (between the two
	// stored copies of an event too), over the whole history and a range.
	ranged := history.Filter{Pipeline: "pipe.roundtrip", From: model.MustParseDate("2026-08-10"), To: model.MustParseDate("2026-08-12")}
	wantRanged, err := st.Events(ctx, ranged)
	if err != nil {
		t.Fatal(err)
	}
	// A Small read of two ranges at once (AlsoFrom, AlsoTo): the events of
	// either, each once where they overlap, in the sort key's order.
	d := model.MustParseDate
	wide, err := st.Events(ctx, history.Filter{Pipeline: "pipe.roundtrip", From: d("2026-08-10"), To: d("2026-08-15")})
	if err != nil {
		t.Fatal(err)
	}
	var apart []model.Event // 08-10..08-11 and 08-14..08-15
	for _, e := range wide {
		if e.BusinessDate.Compare(d("2026-08-12")) < 0 || e.BusinessDate.Compare(d("2026-08-13")) > 0 {
			apart = append(apart, e)
		}
	}
	if len(apart) == len(wide) || len(apart) == 0 {
		t.Fatalf("the test data has %d events of 08-10..08-15, %d outside 08-12..08-13: want some of each", len(wide), len(apart))
	}
	for _, rows := range []int{1, 2, 7, 13, 0} {
		small.WindowRows = rows
		for _, tt := range []struct {
			f    history.Filter
			want []model.Event
		}{
			{history.Filter{Pipeline: "pipe.roundtrip"}, got},
			{ranged, wantRanged},
			{history.Filter{Pipeline: "pipe.roundtrip", From: d("2026-08-10"), To: d("2026-08-12"), AlsoFrom: d("2026-08-11"), AlsoTo: d("2026-08-15")}, wide},
			{history.Filter{Pipeline: "pipe.roundtrip", From: d("2026-08-14"), To: d("2026-08-15"), AlsoFrom: d("2026-08-10"), AlsoTo: d("2026-08-11")}, apart},
		} {
			f := tt.f
			f.Small = true
			read, err := small.Events(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(read, tt.want) {
				t.Fatalf("Small read of %d rows first, %s..%s (and %s..%s): %d events, want the windowed read's %d in its order", rows, f.From, f.To, f.AlsoFrom, f.AlsoTo, len(read), len(tt.want))
			}
		}
	}

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
	got, err = st.Events(ctx, history.Filter{Batch: &key})
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
	got, err = st.Events(ctx, history.Filter{Pipeline: "pipe.roundtrip", From: from, To: to})
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

// TestCensusBatchEventsAndHeartbeats: the reads backfill plans with.
// Census counts stored rows (copies included) per pipeline and finds each
// pipeline's first date in the whole table; EachBatchEvent gives several
// pipelines' events once each in sort key order; LatestHeartbeats gives
// every event at each process's latest time up to the as-of time (once,
// however many copies are stored), and no earlier or later one.
func TestCensusBatchEventsAndHeartbeats(t *testing.T) {
	ctx, conn, db, s := newDatabase(t, "store_census")
	a := testenv.Events(600, "census.a", 1) // business dates 2026-08-01..2026-09-29
	b := testenv.Events(300, "census.b", 2)
	if err := s.Events(ctx, append(append([]model.Event(nil), a...), b...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Events(ctx, a); err != nil { // copies of census.a
		t.Fatal(err)
	}
	at := func(ts string) time.Time { return time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).Add(mustDur(t, ts)) }
	hb := func(id, comp, ts string) model.Event {
		return model.Event{Spec: model.SpecV1, ID: id, Type: model.ProcessHeartbeat, Time: at(ts), Pipeline: "census.hb", System: model.Consumer, Component: comp}
	}
	hbs := []model.Event{hb("h1", "w1", "1h"), hb("h2", "w1", "2h"), hb("h3", "w1", "2h"), hb("h4", "w1", "5h"), hb("h5", "w2", "30m")}
	if err := s.Events(ctx, hbs); err != nil {
		t.Fatal(err)
	}
	if err := s.Events(ctx, hbs); err != nil { // copies, not merged yet: each read once
		t.Fatal(err)
	}
	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}

	from, to := model.MustParseDate("2026-09-01"), model.MustParseDate("2026-09-10")
	readFrom := model.MustParseDate("2026-08-31")
	census, err := st.Census(ctx, history.CensusFilter{ReadFrom: readFrom, From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	want := func(evs []model.Event, copies uint64, lo model.Date) (n uint64, first model.Date) {
		for _, e := range evs {
			if !e.Type.HasBatch() {
				continue
			}
			if first.IsZero() || e.BusinessDate.Compare(first) < 0 {
				first = e.BusinessDate
			}
			if e.BusinessDate.Compare(lo) >= 0 && e.BusinessDate.Compare(to) <= 0 {
				n += copies
			}
		}
		return n, first
	}
	rowsA, firstA := want(a, 2, readFrom)
	inA, _ := want(a, 2, from)
	rowsB, firstB := want(b, 1, readFrom)
	inB, _ := want(b, 1, from)
	wantCensus := []history.PipelineRows{{Pipeline: "census.a", First: firstA, Rows: rowsA, InRange: inA}, {Pipeline: "census.b", First: firstB, Rows: rowsB, InRange: inB}}
	if !reflect.DeepEqual(census, wantCensus) {
		t.Fatalf("census %+v\nwant     %+v", census, wantCensus)
	}
	only, err := st.Census(ctx, history.CensusFilter{Pipelines: []string{"census.b", "census.none"}, ReadFrom: readFrom, From: from, To: to})
	if err != nil || len(only) != 1 || only[0].Pipeline != "census.b" {
		t.Fatalf("census of census.b: %+v, %v", only, err)
	}

	var got []model.Event
	if err := st.EachBatchEvent(ctx, []string{"census.a", "census.b"}, readFrom, to, func(e model.Event) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var wantEvents []model.Event
	for _, e := range append(append([]model.Event(nil), a...), b...) {
		if e.Type.HasBatch() && e.BusinessDate.Compare(readFrom) >= 0 && e.BusinessDate.Compare(to) <= 0 {
			wantEvents = append(wantEvents, e)
		}
	}
	assertSameSet(t, got, wantEvents)
	for i := 1; i < len(got); i++ {
		p, q := got[i-1], got[i]
		if c := p.Key().Compare(q.Key()); c > 0 || c == 0 && p.ID >= q.ID {
			t.Fatalf("events %d and %d out of the sort key order: %s %s then %s %s", i-1, i, p.Key(), p.ID, q.Key(), q.ID)
		}
	}

	tests := []struct {
		asOf string
		want []string // event ids
	}{
		{"3h", []string{"h2", "h3", "h5"}}, // w1's two rows at 2h (the caller breaks the tie), w2's only one
		{"10h", []string{"h4", "h5"}},
		{"45m", []string{"h5"}},
		{"10m", nil},
	}
	for _, tt := range tests {
		hs, err := st.LatestHeartbeats(ctx, []string{"census.hb"}, at(tt.asOf))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hs {
			ids = append(ids, h.ID)
			if h.Type != model.ProcessHeartbeat || h.Pipeline != "census.hb" || h.System != model.Consumer {
				t.Errorf("heartbeat %+v: wrong fields", h)
			}
		}
		sort.Strings(ids)
		if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
			t.Errorf("as of +%s: heartbeats %v, want %v", tt.asOf, ids, tt.want)
		}
	}
}

func mustDur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// newDatabase creates a test database with handoff's schema and returns a
// context bounding the test, the connection, the database and a sink
// writing into it.
func newDatabase(t *testing.T, prefix string) (context.Context, driver.Conn, string, *writer.Sink) {
	t.Helper()
	d := storetest.NewDB(t, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx, d.Conn, d.Name, d.Sink
}

// TestLatestHeartbeatPerProcess: of each process, the heartbeat a
// batches.Processes keeps of LatestHeartbeats's answer (latest time, ties
// to the greatest event id), once however many copies are stored, ordered
// by process; so a Set fed either read holds the same heartbeats.
func TestLatestHeartbeatPerProcess(t *testing.T) {
	ctx, conn, db, s := newDatabase(t, "store_hb_each")
	at := func(ts string) time.Time { return time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).Add(mustDur(t, ts)) }
	hb := func(pipeline string, sys model.System, comp, id, ts string) model.Event {
		return model.Event{Spec: model.SpecV1, ID: id, Type: model.ProcessHeartbeat, Time: at(ts), Pipeline: pipeline, System: sys, Component: comp}
	}
	hbs := []model.Event{
		hb("hb.a", model.Consumer, "w1", "h1", "1h"), hb("hb.a", model.Consumer, "w1", "h3", "2h"), hb("hb.a", model.Consumer, "w1", "h2", "2h"),
		hb("hb.a", model.Consumer, "w1", "h4", "5h"), hb("hb.a", model.Consumer, "w2", "h5", "30m"),
		hb("hb.a", model.Producer, "w1", "h6", "2h"), hb("hb.a", model.Producer, "w1", "H7", "2h"), // upper case sorts first: h6 wins
		hb("hb.b", model.Consumer, "w1", "h8", "90m"),
	}
	if err := s.Events(ctx, hbs); err != nil {
		t.Fatal(err)
	}
	if err := s.Events(ctx, hbs[:5]); err != nil { // copies, not merged yet
		t.Fatal(err)
	}
	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		asOf      string
		pipelines []string
		want      []string // "pipeline/system/component=id@time", in order
	}{
		{"3h", []string{"hb.a"}, []string{"hb.a/consumer/w1=h3@2h0m0s", "hb.a/consumer/w2=h5@30m0s", "hb.a/producer/w1=h6@2h0m0s"}},
		{"10h", nil, []string{"hb.a/consumer/w1=h4@5h0m0s", "hb.a/consumer/w2=h5@30m0s", "hb.a/producer/w1=h6@2h0m0s", "hb.b/consumer/w1=h8@1h30m0s"}},
		{"2h", []string{"hb.a", "hb.b"}, []string{"hb.a/consumer/w1=h3@2h0m0s", "hb.a/consumer/w2=h5@30m0s", "hb.a/producer/w1=h6@2h0m0s", "hb.b/consumer/w1=h8@1h30m0s"}},
		{"45m", nil, []string{"hb.a/consumer/w2=h5@30m0s"}},
		{"10m", nil, nil},
	}
	for _, tt := range tests {
		each, err := st.LatestHeartbeatPerProcess(ctx, tt.pipelines, at(tt.asOf))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range each {
			if h.Type != model.ProcessHeartbeat || h.Spec != model.SpecV1 || h.Time.Location() != time.UTC {
				t.Errorf("heartbeat %+v: wrong fields", h)
			}
			got = append(got, h.Pipeline+"/"+string(h.System)+"/"+h.Component+"="+h.ID+"@"+h.Time.Sub(at("0s")).String())
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("as of +%s, pipelines %v: heartbeats\n%v\nwant\n%v", tt.asOf, tt.pipelines, got, tt.want)
		}
		all, err := st.LatestHeartbeats(ctx, tt.pipelines, at(tt.asOf))
		if err != nil {
			t.Fatal(err)
		}
		var fromAll, fromEach batches.Processes
		for i := range all {
			fromAll.Add(&all[i])
		}
		for i := range each {
			fromEach.Add(&each[i])
		}
		for _, p := range []string{"hb.a", "hb.b"} {
			if a, e := fromAll.Alive(p, nil), fromEach.Alive(p, nil); !reflect.DeepEqual(a, e) {
				t.Errorf("as of +%s, %s: the heartbeats kept of LatestHeartbeats %+v, of LatestHeartbeatPerProcess %+v", tt.asOf, p, a, e)
			}
		}
	}
}

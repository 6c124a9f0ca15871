package live_test

import (
	"context"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/judge/stream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/judgements"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// TestTakeoverRestoresAsTheStream: a detector that takes over half the
// partitions from what ClickHouse stores (Runner.Assign: the unordered
// read of the partitions' history, copies of events not yet merged among
// them, then the stored findings) ends in the state of one that folded
// the same events as they came and restored the findings its predecessor
// published: its next advance publishes the same records, byte for byte,
// and raises none of those published before again. The history has
// re-runs, failures and anomalies (testenv.RecentEvents), heartbeats, and
// a tenth of its events stored twice; the predecessor advanced five times
// while the events came, so findings were raised, updated and resolved.
func TestTakeoverRestoresAsTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn := testenv.ClickHouse(t)
	db, sink, set := storedDatabase(ctx, t, conn, "takeover_test")
	now := time.Now().UTC().Truncate(time.Millisecond)
	events := testenv.RecentEvents(20_000, "takeover", 200, now)
	slices.SortStableFunc(events, func(a, b model.Event) int { return a.Time.Compare(b.Time) })
	r := rand.New(rand.NewSource(3))
	var copies []model.Event
	for i := range events {
		if r.Intn(10) == 0 {
			copies = append(copies, events[i])
		}
	}
	// Stored as ingest stores them, in two INSERTs: the copies later, as
	// a redelivery after a fault would be.
	for i, part := range [][]model.Event{events, copies} {
		var b schema.EventBatch
		for j := range part {
			e := &part[j]
			b.Add(e, schema.Source{Topic: "events", Partition: int32(live.Murmur2([]byte(e.PartitionKey()), takeoverPartitions)), Offset: int64(j)},
				now.UnixMilli()+int64(i))
		}
		if err := sink.InsertEvents(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}

	// The predecessor owned every partition and advanced as the events
	// came; every record it published is stored.
	prev, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	var published []detect.Finding
	var rows schema.FindingRows
	next := 0
	for _, at := range []time.Duration{-90 * time.Hour, -80 * time.Hour, -70 * time.Hour, -60 * time.Hour, -50 * time.Hour} {
		cut := now.Add(at)
		for ; next < len(events) && !events[next].Time.After(cut); next++ {
			prev.Observe(&events[next])
		}
		prev.AdvanceEach(cut, cut, func(f *detect.Finding) {
			published = append(published, *f)
			rows.Add(schema.FindingRowOf(f), schema.Source{Topic: "findings", Offset: int64(rows.Len())}, now.UnixMilli())
		})
	}
	if err := sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}
	resolved := 0
	for i := range published {
		if published[i].State == detect.Resolved {
			resolved++
		}
	}
	if len(published) < 100 || resolved == 0 {
		t.Fatalf("the predecessor published %d records, %d resolving: want findings raised and resolved", len(published), resolved)
	}

	// The heir: Runner.Assign of partitions 0..2 from the store.
	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	heir, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := live.New(live.Settings{EventsTopic: "events", FindingsTopic: "findings", IngestGroup: "i", ResultsGroup: "r"},
		live.Options{Detector: heir, History: st, Offsets: noOffsets{}, Publisher: &discard{}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	start := map[int]int64{}
	for _, p := range taken {
		start[p] = 0
	}
	if err := runner.Assign(ctx, stream.Assignment{Start: start, Partitions: takeoverPartitions}); err != nil {
		t.Fatal(err)
	}

	// The reference: the same partitions' events as their stream gives
	// them (the copies again), and the latest record of each fingerprint.
	ref, err := detect.New(detect.Config{Contracts: set, Owns: ownsTaken})
	if err != nil {
		t.Fatal(err)
	}
	ref.Floor(now)
	for _, part := range [][]model.Event{events, copies} {
		for i := range part {
			// The partitions' events only: heartbeats have no batch, and
			// a partition's consumer reads only its own.
			if live.Murmur2([]byte(part[i].PartitionKey()), takeoverPartitions) < len(taken) {
				ref.Observe(&part[i])
			}
		}
	}
	if err := ref.Restore(latestRecords(published)...); err != nil {
		t.Fatal(err)
	}

	if g, w := heir.Stats(), ref.Stats(); g != w {
		t.Errorf("after the takeover the heir holds %+v, the reference %+v", g, w)
	}
	got, want := heir.Advance(now, now), ref.Advance(now, now)
	if len(want) == 0 {
		t.Fatal("the reference published nothing after the takeover: the test would not compare anything")
	}
	if len(got) != len(want) {
		t.Errorf("the heir published %d records, the reference %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if g, w := string(got[i].AppendJSON(nil)), string(want[i].AppendJSON(nil)); g != w {
			t.Fatalf("record %d differs:\n got %s\nwant %s", i, g, w)
		}
	}
	before := map[string]int{}
	for i := range published {
		before[published[i].Fingerprint] = max(before[published[i].Fingerprint], published[i].Seq)
	}
	for i := range got {
		if s, ok := before[got[i].Fingerprint]; ok && got[i].Seq <= s {
			t.Errorf("the heir published %s seq %d again (seq %d was published before)", got[i].Fingerprint, got[i].Seq, s)
		}
	}
}

// TestFindingsReadForRestore: Store.Findings (the restore's read: a dozen
// columns) gives, for every fingerprint, what the listings' read
// (store/judgements, every column) gives of its latest record in what the
// detector restores: state, kind, name, seq, status, verdict, times and
// batch; a finding with several records gives its highest seq. A keep
// predicate leaves the other batches' findings out.
func TestFindingsReadForRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := testenv.ClickHouse(t)
	db, sink, set := storedDatabase(ctx, t, conn, "takeover_findings")
	now := time.Now().UTC().Truncate(time.Millisecond)
	events := testenv.RecentEvents(3000, "takeover", 50, now)
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	var rows schema.FindingRows
	for i, at := range []time.Duration{-72 * time.Hour, -60 * time.Hour, -1 * time.Hour} {
		for j := i; j < len(events); j += 3 {
			d.Observe(&events[j])
		}
		cut := now.Add(at)
		d.AdvanceEach(cut, cut, func(f *detect.Finding) {
			rows.Add(schema.FindingRowOf(f), schema.Source{Topic: "findings", Offset: int64(rows.Len())}, now.UnixMilli())
		})
	}
	if err := sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}
	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	from := model.MustParseDate(now.Format(time.DateOnly)).AddDays(-detect.DefaultRetain)
	want, err := judgements.Read(ctx, conn, db, judgements.Filter{From: from}, judgements.Unordered, 0)
	if err != nil {
		t.Fatal(err)
	}
	type restored struct {
		batch                      model.BatchKey
		state, kind, name, status  string
		verdict                    string
		seq                        int
		raised, resolved, deadline time.Time
	}
	of := func(f *detect.Finding) restored {
		return restored{f.Batch, string(f.State), string(f.Kind), f.Name, string(f.Status), f.Verdict, f.Seq, f.RaisedAt, f.ResolvedAt, f.Deadline}
	}
	byFP := map[string]restored{}
	several := 0
	for i := range want.Findings {
		byFP[want.Findings[i].Fingerprint] = of(&want.Findings[i])
		if want.Findings[i].Seq > 1 {
			several++
		}
	}
	if len(byFP) < 50 || several == 0 {
		t.Fatalf("%d findings stored, %d with several records: want both", len(byFP), several)
	}
	n := 0
	if err := st.Findings(ctx, from, nil, func(f *detect.Finding) error {
		n++
		w, ok := byFP[f.Fingerprint]
		if !ok {
			t.Errorf("finding %s read for the restore, not by the listings", f.Fingerprint)
		} else if g := of(f); g != w {
			t.Errorf("finding %s: restore reads %+v, the listings %+v", f.Fingerprint, g, w)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(byFP) {
		t.Errorf("the restore read %d findings, the listings %d", n, len(byFP))
	}
	// keep: the findings of the batches it selects, and only those.
	wantKept := 0
	for _, w := range byFP {
		if ownsTaken(w.batch) {
			wantKept++
		}
	}
	kept := 0
	if err := st.Findings(ctx, from, ownsTaken, func(f *detect.Finding) error {
		if kept++; !ownsTaken(f.Batch) {
			t.Errorf("finding %s of %s read, which keep leaves out", f.Fingerprint, f.Batch)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if kept != wantKept || kept == 0 || kept == n {
		t.Errorf("keep selected %d of %d findings, want %d (some, not all)", kept, n, wantKept)
	}
}

// latestRecords is the latest record (highest seq) of each fingerprint
// among fs, what the findings table's reads return.
func latestRecords(fs []detect.Finding) []detect.Finding {
	at := map[string]int{}
	var out []detect.Finding
	for i := range fs {
		if j, ok := at[fs[i].Fingerprint]; ok {
			if fs[i].Seq > out[j].Seq {
				out[j] = fs[i]
			}
			continue
		}
		at[fs[i].Fingerprint] = len(out)
		out = append(out, fs[i])
	}
	return out
}

// storedDatabase returns a new database on conn with the schema, a sink
// writing to it, and an empty contract set.
func storedDatabase(ctx context.Context, tb testing.TB, conn chconn.Conn, name string) (string, *writer.Sink, *contract.Set) {
	tb.Helper()
	db := testenv.Database(tb, conn, name)
	if err := schema.Ensure(ctx, conn, db); err != nil {
		tb.Fatal(err)
	}
	sink, err := writer.New(conn, db)
	if err != nil {
		tb.Fatal(err)
	}
	set, err := contract.NewSet()
	if err != nil {
		tb.Fatal(err)
	}
	return db, sink, set
}

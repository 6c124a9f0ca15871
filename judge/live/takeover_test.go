package live_test

import (
	"bytes"
	"context"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/judge/stream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/judgements"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
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
	db, sink, set := storedDatabase(t, "takeover_test")
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
	// came; every record it published is stored. The records of its first
	// two advances without their batch's events partition (published by a
	// release before the header), the later ones with it.
	prev, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	var published []detect.Finding
	var rows schema.FindingRows
	next := 0
	for i, at := range []time.Duration{-90 * time.Hour, -80 * time.Hour, -70 * time.Hour, -60 * time.Hour, -50 * time.Hour} {
		cut := now.Add(at)
		for ; next < len(events) && !events[next].Time.After(cut); next++ {
			prev.Observe(&events[next])
		}
		prev.AdvanceEach(cut, cut, func(f *detect.Finding) {
			published = append(published, *f)
			row := partitioned(f)
			if i < 2 {
				row = schema.FindingRowOf(f)
			}
			rows.Add(row, schema.Source{Topic: "findings", Offset: int64(rows.Len())}, now.UnixMilli())
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
	db, sink, set := storedDatabase(t, "takeover_findings")
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
	if err := st.Findings(ctx, from, history.EventsPartitions{}, nil, func(f *detect.Finding) error {
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
	if err := st.Findings(ctx, from, history.EventsPartitions{}, ownsTaken, func(f *detect.Finding) error {
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

// TestFindingsOfPartitions: the read of a takeover (Store.Findings given
// the partitions taken over, and keep) receives from ClickHouse exactly
// the latest record of each finding of the batches of those partitions,
// and nothing of the others', whether a finding's records were stored
// with their batch's events partition (the detector's header), without
// it (before the header existed), partly with it, or with the partition
// among another count (the topic had fewer partitions); the server
// leaves out the records that say another partition.
func TestFindingsOfPartitions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := testenv.ClickHouse(t)
	db, sink, set := storedDatabase(t, "takeover_partitions")
	now := time.Now().UTC().Truncate(time.Millisecond)
	events := testenv.RecentEvents(3000, "takeover", 50, now)
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	// How each finding's records are stored, by the order it was first
	// published in: with the partition (of takeoverPartitions), without,
	// the first records without and the later with, and among 3.
	const (
		withPartition = iota
		without
		laterWith
		ofThree
	)
	how := map[string]int{}
	latest := map[string]detect.Finding{}
	var rows schema.FindingRows
	for i, at := range []time.Duration{-72 * time.Hour, -60 * time.Hour, -1 * time.Hour} {
		for j := i; j < len(events); j += 3 {
			d.Observe(&events[j])
		}
		cut := now.Add(at)
		d.AdvanceEach(cut, cut, func(f *detect.Finding) {
			h, ok := how[f.Fingerprint]
			if !ok {
				h = len(how) % 4
				how[f.Fingerprint] = h
			}
			if w, ok := latest[f.Fingerprint]; !ok || f.Seq > w.Seq {
				latest[f.Fingerprint] = *f
			}
			row := partitioned(f)
			switch {
			case h == without, h == laterWith && f.Seq == 1:
				row.EventsPartition, row.EventsPartitions = 0, 0
			case h == ofThree:
				row.EventsPartition, row.EventsPartitions = int32(live.Murmur2([]byte(f.Batch.String()), 3)), 3
			}
			rows.Add(row, schema.Source{Topic: "findings", Offset: int64(rows.Len())}, now.UnixMilli())
		})
	}
	if err := sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}
	st, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	// Every way of storing among the findings of both sides, and a
	// finding published again after its first record.
	seen := map[[2]int]int{}
	again := 0
	for fp, f := range latest {
		seen[[2]int{how[fp], b2i(ownsTaken(f.Batch))}]++
		if how[fp] == laterWith && f.Seq > 1 {
			again++
		}
	}
	if len(seen) != 8 || again == 0 {
		t.Fatalf("findings by (how stored, taken): %v, %d stored partly with the partition: want every combination", seen, again)
	}
	from := model.MustParseDate(now.Format(time.DateOnly)).AddDays(-detect.DefaultRetain)
	ps := history.EventsPartitions{Take: taken, Count: takeoverPartitions}
	read := func(keep func(model.BatchKey) bool) map[string]detect.Finding {
		got := map[string]detect.Finding{}
		if err := st.Findings(ctx, from, ps, keep, func(f *detect.Finding) error {
			if _, ok := got[f.Fingerprint]; ok {
				t.Errorf("finding %s read twice", f.Fingerprint)
			}
			got[f.Fingerprint] = *f
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}

	// What the server sends: every finding of the partitions, none whose
	// records all say another partition of takeoverPartitions.
	sent := read(nil)
	for fp, f := range latest {
		_, ok := sent[fp]
		switch {
		case ownsTaken(f.Batch) && !ok:
			t.Errorf("finding %s of %s (taken, stored %d) not sent", fp, f.Batch, how[fp])
		case !ownsTaken(f.Batch) && how[fp] == withPartition && ok:
			t.Errorf("finding %s of %s (not taken, stored with its partition) sent", fp, f.Batch)
		}
	}
	if len(sent) == len(latest) {
		t.Errorf("the server sent all %d findings: the partitions selected none out", len(sent))
	}

	// With keep: exactly the findings of the partitions, each its latest
	// record.
	got := read(ownsTaken)
	want := 0
	for fp, f := range latest {
		if !ownsTaken(f.Batch) {
			if _, ok := got[fp]; ok {
				t.Errorf("finding %s of %s (not taken, stored %d) read", fp, f.Batch, how[fp])
			}
			continue
		}
		want++
		g, ok := got[fp]
		if !ok {
			t.Errorf("finding %s of %s (taken, stored %d) not read", fp, f.Batch, how[fp])
		} else if g.Seq != f.Seq || g.State != f.State || g.Status != f.Status {
			t.Errorf("finding %s: read seq %d %s %s, latest stored seq %d %s %s", fp, g.Seq, g.State, g.Status, f.Seq, f.State, f.Status)
		}
	}
	if len(got) != want {
		t.Errorf("read %d findings, want the %d of the partitions taken", len(got), want)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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

// storedDatabase returns a new database with the schema (storetest), a sink
// writing to it, and an empty contract set.
func storedDatabase(tb testing.TB, name string) (string, *writer.Sink, *contract.Set) {
	tb.Helper()
	d := storetest.NewDB(tb, name)
	set, err := contract.NewSet()
	if err != nil {
		tb.Fatal(err)
	}
	return d.Name, d.Sink, set
}

// recorder is a Publisher that keeps copies of what it is given.
type recorder struct{ msgs []kafka.Message }

func (p *recorder) Publish(_ context.Context, _ string, msgs ...kafka.Message) error {
	for _, m := range msgs {
		c := kafka.Message{Key: bytes.Clone(m.Key), Value: bytes.Clone(m.Value)}
		for _, h := range m.Headers {
			c.Headers = append(c.Headers, kafka.Header{Key: h.Key, Value: bytes.Clone(h.Value)})
		}
		p.msgs = append(p.msgs, c)
	}
	return nil
}

// TestFindingsSayTheirPartition: every finding record the runner
// publishes carries, in its header schema.EventsPartitionHeader, the
// events topic's partition of its batch among the topic's partitions (what
// handoff ingest stores for a takeover's read), and its value is the
// finding's JSON alone.
func TestFindingsSayTheirPartition(t *testing.T) {
	ctx := context.Background()
	set, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	var pub recorder
	r, err := live.New(live.Settings{EventsTopic: "events", FindingsTopic: "findings", IngestGroup: "i", ResultsGroup: "r"},
		live.Options{Detector: d, History: &discard{}, Offsets: noOffsets{}, Publisher: &pub, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	start := map[int]int64{}
	for p := range takeoverPartitions {
		start[p] = 0
	}
	if err := r.Assign(ctx, stream.Assignment{Start: start, Partitions: takeoverPartitions}); err != nil {
		t.Fatal(err)
	}
	for _, e := range testenv.RecentEvents(2000, "header", 40, now) {
		if err := r.Fold(ctx, kafka.Message{Value: e.AppendJSON(nil)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Advance(ctx, now, now); err != nil {
		t.Fatal(err)
	}
	if len(pub.msgs) < 10 {
		t.Fatalf("%d findings published: want some to check", len(pub.msgs))
	}
	seen := map[int]bool{}
	for _, m := range pub.msgs {
		f, err := detect.ParseFinding(m.Value)
		if err != nil {
			t.Fatalf("record %s: %v", m.Key, err)
		}
		if string(f.AppendJSON(nil)) != string(m.Value) {
			t.Errorf("record %s is not the finding's JSON alone: %s", m.Key, m.Value)
		}
		want := live.Murmur2([]byte(f.Batch.String()), takeoverPartitions)
		if len(m.Headers) != 1 || m.Headers[0].Key != schema.EventsPartitionHeader {
			t.Fatalf("record %s: headers %v, want only %s", m.Key, m.Headers, schema.EventsPartitionHeader)
		}
		p, n, ok := schema.ParseEventsPartition(m.Headers[0].Value)
		if !ok || int(p) != want || n != takeoverPartitions {
			t.Errorf("record %s: header %q, want partition %d of %d", m.Key, m.Headers[0].Value, want, takeoverPartitions)
		}
		seen[want] = true
	}
	if len(seen) < 2 {
		t.Errorf("the findings' batches are of partitions %v: want several", seen)
	}
}

// cutShort is a History that serves events; its read number cut (from
// 1; 0: none) stops halfway, closes halfway and waits for its context's
// end (a takeover the group rebalances away from).
type cutShort struct {
	discard
	events     []model.Event
	reads, cut int
	halfway    chan struct{}
}

func (h *cutShort) PartitionEvents(ctx context.Context, _ string, partitions []int, _ model.Date, fn func(*model.Event) error) error {
	h.reads++
	for i := range h.events {
		if h.reads == h.cut && i == len(h.events)/2 {
			close(h.halfway)
			<-ctx.Done()
			return ctx.Err()
		}
		if !slices.Contains(partitions, live.Murmur2([]byte(h.events[i].PartitionKey()), takeoverPartitions)) {
			continue
		}
		if err := fn(&h.events[i]); err != nil {
			return err
		}
	}
	return nil
}

// TestTakeoverCutShort: a takeover cancelled halfway through its read
// (stream.Member cancels it when the group rebalances) leaves nothing of
// its partitions behind, and the next Assign that gives them again reads
// them whole: the detector then holds what one that took them over at
// once holds, and the partitions it kept throughout are kept.
func TestTakeoverCutShort(t *testing.T) {
	set, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	events := testenv.RecentEvents(4000, "cut", 80, now)
	newRunner := func(h live.History) (*live.Runner, *detect.Detector) {
		return clockedRunner(t, set, h, &discard{}, now)
	}
	assign := func(ctx context.Context, r *live.Runner, ps ...int) error {
		start := map[int]int64{}
		for _, p := range ps {
			start[p] = 0
		}
		return r.Assign(ctx, stream.Assignment{Start: start, Partitions: takeoverPartitions})
	}

	h := &cutShort{events: events, cut: 2, halfway: make(chan struct{})}
	r, d := newRunner(h)
	if err := assign(context.Background(), r, 0); err != nil {
		t.Fatal(err)
	}
	kept := d.Stats()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-h.halfway; cancel() }()
	if err := assign(ctx, r, 0, 1, 2); err == nil {
		t.Fatal("the takeover cancelled halfway returned no error")
	}
	if g := d.Stats(); g.Open != kept.Open || g.Closed != kept.Closed {
		t.Errorf("after the takeover cut short the detector holds %+v, before it %+v: want what it held", g, kept)
	}
	if err := assign(context.Background(), r, 0, 1, 2); err != nil {
		t.Fatal(err)
	}
	ref, rd := newRunner(&cutShort{events: events})
	if err := assign(context.Background(), ref, 0, 1, 2); err != nil {
		t.Fatal(err)
	}
	if g, w := d.Stats(), rd.Stats(); g != w || w.Open == kept.Open {
		t.Errorf("after the takeover given again the detector holds %+v, one that took it over at once %+v (before: %+v)", g, w, kept)
	}
}

// cancelling is a publisher whose first Publish fails as it does when the
// group rebalances during an advance (stream.Member cancels the advance's
// context): it cancels the context and returns its error. It counts what
// it is given after that.
type cancelling struct {
	discard
	cancel context.CancelFunc
	failed bool
}

func (p *cancelling) Publish(ctx context.Context, topic string, msgs ...kafka.Message) error {
	if !p.failed {
		p.failed = true
		p.cancel()
		return ctx.Err()
	}
	return p.discard.Publish(ctx, topic, msgs...)
}

// asked is a history that records the partitions each takeover read.
type asked struct {
	cutShort
	partitions [][]int
}

func (h *asked) PartitionEvents(ctx context.Context, topic string, partitions []int, from model.Date, fn func(*model.Event) error) error {
	h.partitions = append(h.partitions, slices.Clone(partitions))
	return h.cutShort.PartitionEvents(ctx, topic, partitions, from, fn)
}

// TestAdvanceCutShort: an Advance whose findings could not all be
// published because the group rebalanced (its context cancelled) leaves
// the detector holding findings it takes for published that are not;
// the next Assign, even of the same partitions, reads every one of them
// back, and the next Advance publishes what one that took them over at
// once publishes: nothing is lost.
func TestAdvanceCutShort(t *testing.T) {
	set, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	events := testenv.RecentEvents(4000, "cutadv", 80, now)
	assignment := stream.Assignment{Start: map[int]int64{0: 0, 1: 0, 2: 0}, Partitions: takeoverPartitions}
	newRunner := func(h live.History, p live.Publisher) *live.Runner {
		r, _ := clockedRunner(t, set, h, p, now)
		return r
	}
	ctx, cancel := context.WithCancel(context.Background())
	pub := &cancelling{cancel: cancel}
	h := &asked{cutShort: cutShort{events: events}}
	r := newRunner(h, pub)
	if err := r.Assign(context.Background(), assignment); err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, now, now); err == nil || !pub.failed {
		t.Fatalf("the advance cut short returned %v (publish failed: %v); want its error", err, pub.failed)
	}
	if err := r.Assign(context.Background(), assignment); err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{0, 1, 2}, {0, 1, 2}}; !reflect.DeepEqual(h.partitions, want) {
		t.Errorf("the takeovers read partitions %v, want %v: after an advance cut short every partition is read back", h.partitions, want)
	}
	if err := r.Advance(context.Background(), now, now); err != nil {
		t.Fatal(err)
	}
	want := &discard{}
	ref := newRunner(&cutShort{events: events}, want)
	if err := ref.Assign(context.Background(), assignment); err != nil {
		t.Fatal(err)
	}
	if err := ref.Advance(context.Background(), now, now); err != nil {
		t.Fatal(err)
	}
	if want.msgs == 0 || pub.msgs != want.msgs || pub.bytes != want.bytes {
		t.Errorf("after the advance cut short and the partitions read back, the next advance published %d records (%d bytes); one that took them over at once %d (%d bytes)",
			pub.msgs, pub.bytes, want.msgs, want.bytes)
	}
}

// ingested is a History of events (cutShort's) and of the findings
// acknowledged by an ingesting publisher, as handoff ingest stores them:
// the latest record of each fingerprint, read by its events partition.
type ingested struct {
	asked
	findings map[string]detect.Finding
}

func (h *ingested) Findings(_ context.Context, _ model.Date, ps history.EventsPartitions, keep func(model.BatchKey) bool, fn func(*detect.Finding) error) error {
	for _, fp := range slices.Sorted(maps.Keys(h.findings)) {
		f := h.findings[fp]
		if ps.Count > 0 && !slices.Contains(ps.Take, live.Murmur2([]byte(f.Batch.String()), ps.Count)) {
			continue
		}
		if keep != nil && !keep(f.Batch) {
			continue
		}
		if err := fn(&f); err != nil {
			return err
		}
	}
	return nil
}

// ingesting is a publisher whose records are stored in h once
// acknowledged (as handoff ingest stores them) and kept in msgs; its
// Publish number cut (from 1; 0: none) fails as a rebalance makes it
// fail: it cancels the advance's context and returns its error.
type ingesting struct {
	h          *ingested
	calls, cut int
	cancel     context.CancelFunc
	recorder
}

func (p *ingesting) Publish(ctx context.Context, _ string, msgs ...kafka.Message) error {
	if p.calls++; p.calls == p.cut {
		p.cancel()
		return ctx.Err()
	}
	for _, m := range msgs {
		f, err := detect.ParseFinding(m.Value)
		if err != nil {
			return err
		}
		if old, ok := p.h.findings[f.Fingerprint]; !ok || old.Seq < f.Seq {
			p.h.findings[f.Fingerprint] = f
		}
	}
	return p.recorder.Publish(ctx, "", msgs...)
}

// TestAdvanceCutShortRereadsItsPartitions: an Advance cut short after
// some of its chunks were acknowledged leaves unsure only the partitions
// of the findings of the chunk that failed and of the later ones; the
// next Assign of the same partitions reads only those back and keeps the
// rest (a partition whose findings were all published before), and the
// next Advance publishes, byte for byte, what a runner that took every
// partition over fresh from the same store publishes.
func TestAdvanceCutShortRereadsItsPartitions(t *testing.T) {
	set, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	h := &ingested{asked: asked{cutShort: cutShort{events: testenv.RecentEvents(12_000, "cutpart", 240, now)}}, findings: map[string]detect.Finding{}}
	newRunner := func(p live.Publisher) *live.Runner {
		r, _ := clockedRunner(t, set, h, p, now)
		return r
	}
	assign := func(r *live.Runner, ps ...int) {
		t.Helper()
		start := map[int]int64{}
		for _, p := range ps {
			start[p] = 0
		}
		if err := r.Assign(context.Background(), stream.Assignment{Start: start, Partitions: takeoverPartitions}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	pub := &ingesting{h: h, cancel: cancel}
	r := newRunner(pub)
	// Partition 2 first: its findings are all acknowledged.
	assign(r, 2)
	if err := r.Advance(ctx, now, now); err != nil {
		t.Fatal(err)
	}
	first := len(pub.msgs)
	// Then 0 and 1, whose advance fails at its second chunk.
	assign(r, 0, 1, 2)
	pub.cut = pub.calls + 2
	if err := r.Advance(ctx, now, now); err == nil || pub.calls != pub.cut {
		t.Fatalf("the advance cut short returned %v after %d publishes; want its error at publish %d", err, pub.calls, pub.cut)
	}
	if first == 0 || len(pub.msgs) == first {
		t.Fatalf("%d findings acknowledged of partition 2, then %d of the advance cut short: want some of each", first, len(pub.msgs)-first)
	}
	acked := len(pub.msgs)
	assign(r, 0, 1, 2)
	if want := [][]int{{2}, {0, 1}, {0, 1}}; !reflect.DeepEqual(h.partitions, want) {
		t.Errorf("the takeovers read partitions %v, want %v: after an advance cut short only the partitions it left findings unpublished of are read back", h.partitions, want)
	}
	// The reference takes every partition over from the store as it is
	// now (before the next advance adds to it).
	var want recorder
	ref := newRunner(&want)
	assign(ref, 0, 1, 2)
	if err := ref.Advance(context.Background(), now, now); err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(context.Background(), now, now); err != nil {
		t.Fatal(err)
	}
	got := pub.msgs[acked:]
	if len(want.msgs) == 0 || !reflect.DeepEqual(got, want.msgs) {
		t.Errorf("after the advance cut short and its partitions read back, the next advance published %d records; one that took every partition over fresh %d: want the same records, byte for byte",
			len(got), len(want.msgs))
	}
}

// clockedRunner is a runner of a new detector of set over h, publishing
// to p, whose clock stands at now.
func clockedRunner(t *testing.T, set *contract.Set, h live.History, p live.Publisher, now time.Time) (*live.Runner, *detect.Detector) {
	t.Helper()
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	r, err := live.New(live.Settings{EventsTopic: "events", FindingsTopic: "findings", IngestGroup: "i", ResultsGroup: "r"},
		live.Options{Detector: d, History: h, Offsets: noOffsets{}, Publisher: p, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

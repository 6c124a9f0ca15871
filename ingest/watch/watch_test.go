package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/files"
	"github.com/handoff-dev/handoff/ingest/watch"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/model/manifest"
)

const abs = `pipeline: abs.daily
schedule: daily
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
rows:
  header: true
`

func contracts(t testing.TB, extra ...string) *contract.Set {
	t.Helper()
	var cs []*contract.Contract
	for i, y := range append([]string{abs}, extra...) {
		c, err := contract.Parse(fmt.Sprintf("c%d.yaml", i), []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	set, err := contract.NewSet(cs...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// sink collects what a watcher sends, and counts each event id.
type sink struct {
	mu     sync.Mutex
	events []model.Event
	byID   map[string]int
}

func newSink() *sink { return &sink{byID: map[string]int{}} }

func (s *sink) Send(_ context.Context, events []model.Event) error {
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		s.events = append(s.events, e)
		s.byID[e.ID]++
	}
	return nil
}

func (s *sink) snapshot() []model.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]model.Event(nil), s.events...)
}

func (s *sink) of(typ model.EventType) []model.Event {
	var out []model.Event
	for _, e := range s.snapshot() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// start runs a watcher until the test ends or stop is called.
func start(t testing.TB, cfg watch.Config, s watch.Sink) (w *watch.Watcher, stop func()) {
	t.Helper()
	w, err := watch.New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return w, stop
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatchProducer(t *testing.T) {
	dir := t.TempDir()
	s := newSink()
	restores := restoresFile(t, "account_balance_snapshot_20260929.flag", "")
	w, stop := start(t, watch.Config{Role: watch.Producer, Dir: dir, Contracts: contracts(t), Settle: 100 * time.Millisecond, Component: "build-runner-3", Restores: restores}, s)

	data := "id,balance\n1,10\n2,20\n3,30\n"
	tmp := filepath.Join(dir, "account_balance_snapshot_20260930.csv.tmp")
	write(t, tmp, data)
	waitFor(t, 10*time.Second, "artifact.staged", func() bool { return len(s.of(model.ArtifactStaged)) == 1 })
	final := filepath.Join(dir, "account_balance_snapshot_20260930.csv")
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "account_balance_snapshot_20260930.flag"), "")
	write(t, filepath.Join(dir, "README.md"), "not a batch")
	// A signal restore-signal wrote (marked, and recorded) is not
	// reported, nor is a signal still under its temporary name.
	if _, err := files.WriteAtomic(dir, "account_balance_snapshot_20260929.flag", nil, 0o644, restoredMark("account_balance_snapshot_20260929.flag", "")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ".account_balance_snapshot_20261001.flag.tmp-123456"), "")
	waitFor(t, 10*time.Second, "finalized, published, and the restored signal seen", func() bool {
		return len(s.of(model.ArtifactFinalized)) == 1 && len(s.of(model.SignalPublished)) == 1 && w.Stats().Restored == 1
	})
	stop()

	probe, err := files.Probe(context.Background(), final, files.Options{Format: files.CSV, Header: true})
	if err != nil {
		t.Fatal(err)
	}
	fin := s.of(model.ArtifactFinalized)[0]
	if fin.Key().String() != "abs.daily/2026-09-30/20260930" || fin.Object != "account_balance_snapshot_20260930.csv" ||
		fin.Rows != 3 || fin.Bytes != int64(len(data)) || fin.Checksum != probe.Checksum || fin.System != model.Producer || fin.Component != "build-runner-3" {
		t.Fatalf("artifact.finalized %+v", fin)
	}
	if st := s.of(model.ArtifactStaged)[0]; st.Object != "account_balance_snapshot_20260930.csv.tmp" {
		t.Fatalf("artifact.staged names %q", st.Object)
	}
	if got := w.Stats(); got.Ignored != 1 || got.Emitted != 3 || got.Restored != 1 {
		t.Fatalf("stats %+v, want 1 ignored (README.md), 3 emitted, 1 restored", got)
	}
	for id, n := range s.byID {
		if n != 1 {
			t.Errorf("event %s sent %d times", id, n)
		}
	}
}

// TestWatchThousandsWithRestart: 3,000 files arrive from 8 writers at
// once; the watcher is stopped in the middle and a new one started on the
// same ledger. Every file's event is sent exactly once.
func TestWatchThousandsWithRestart(t *testing.T) {
	const batches = 1500 // a data file and a flag each
	dir := t.TempDir()
	ledger := filepath.Join(t.TempDir(), "ledger")
	s := newSink()
	cfg := watch.Config{Role: watch.Receiver, Dir: dir, Contracts: contracts(t), Settle: 100 * time.Millisecond, Rescan: time.Second, Ledger: ledger}
	_, stop1 := start(t, cfg, s)

	var writers sync.WaitGroup
	day0 := model.MustParseDate("2020-01-01")
	// wave starts 8 writers of batches [from, to): each data file written
	// under a temporary name and renamed, as a transfer does, then its flag.
	wave := func(from, to int) {
		for wr := range 8 {
			writers.Add(1)
			go func() {
				defer writers.Done()
				for i := from + wr; i < to; i += 8 {
					id := day0.AddDays(i).Compact()
					p := filepath.Join(dir, "account_balance_snapshot_"+id+".csv")
					os.WriteFile(p+".part", []byte(fmt.Sprintf("h\n%d\n", i)), 0o644)
					os.Rename(p+".part", p)
					os.WriteFile(filepath.Join(dir, "account_balance_snapshot_"+id+".flag"), nil, 0o644)
				}
			}()
		}
	}
	wave(0, batches/2)
	waitFor(t, 60*time.Second, "a third of the first wave's events", func() bool { return len(s.snapshot()) >= batches/3 })
	// The second wave arrives while the watcher restarts.
	wave(batches/2, batches)
	stop1()
	if n := len(s.snapshot()); n >= 2*batches {
		t.Fatalf("all %d events were sent before the restart: the restart tests nothing", n)
	}
	w2, _ := start(t, cfg, s)
	writers.Wait()
	waitFor(t, 120*time.Second, "every event after the restart", func() bool { return len(s.snapshot()) >= 2*batches })
	// Let the second watcher rescan once more: nothing may come twice.
	rescans := time.Now().Add(1500 * time.Millisecond)
	waitFor(t, 10*time.Second, "a rescan", func() bool { return time.Now().After(rescans) })

	if n := len(s.snapshot()); n != 2*batches {
		t.Fatalf("%d events sent, want %d", n, 2*batches)
	}
	for id, n := range s.byID {
		if n != 1 {
			t.Fatalf("event %s sent %d times", id, n)
		}
	}
	if got := len(s.of(model.ArtifactTransferred)); got != batches {
		t.Fatalf("%d artifact.transferred, want %d", got, batches)
	}
	for _, e := range s.of(model.ArtifactTransferred) {
		if e.Rows != 1 || e.System != model.Exchange || e.Attrs["role"] != "receiver" {
			t.Fatalf("event %+v", e)
		}
	}
	if st := w2.Stats(); st.Ignored != 0 {
		t.Fatalf("second watcher ignored %d files", st.Ignored)
	}
}

// TestWatchSlowInPlaceCopier: a copier writes the final name in place, a
// chunk at a time, slower than the settle window's ticks but faster than
// the window. The watcher reports the file once, complete.
func TestWatchSlowInPlaceCopier(t *testing.T) {
	dir := t.TempDir()
	s := newSink()
	_, stop := start(t, watch.Config{Role: watch.Exchange, Dir: dir, Contracts: contracts(t), Settle: time.Second}, s)
	path := filepath.Join(dir, "account_balance_snapshot_20260930.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("id,balance\n")
	tick := time.NewTicker(50 * time.Millisecond)
	for i := range 30 { // 1.5 s of copying
		<-tick.C
		fmt.Fprintf(f, "%d,%d\n", i, i*10)
		if got := s.of(model.ArtifactTransferred); len(got) > 0 {
			t.Fatalf("reported while still being copied (chunk %d): %+v", i, got[0])
		}
	}
	tick.Stop()
	f.Close()
	st, _ := os.Stat(path)
	waitFor(t, 10*time.Second, "artifact.transferred", func() bool { return len(s.of(model.ArtifactTransferred)) == 1 })
	stop()
	e := s.of(model.ArtifactTransferred)[0]
	if e.Rows != 30 || e.Bytes != st.Size() || len(s.snapshot()) != 1 {
		t.Fatalf("reported %+v (of %d events), want 30 rows, %d bytes, once", e, len(s.snapshot()), st.Size())
	}
}

func TestWatchManifest(t *testing.T) {
	const withManifest = `pipeline: gl.daily
batch_id: "{yyyymmdd}"
artifact: "gl_{batch_id}.tsv"
signal: "gl_{batch_id}.manifest"
signal_content: manifest
`
	dir := t.TempDir()
	s := newSink()
	_, stop := start(t, watch.Config{Role: watch.Producer, Dir: dir, Contracts: contracts(t, withManifest), Settle: 50 * time.Millisecond}, s)
	data := "a\tb\nc\td\n"
	write(t, filepath.Join(dir, "gl_20260930.tsv"), data)
	write(t, filepath.Join(dir, "gl_20261001.tsv"), data)
	p, _ := files.Probe(context.Background(), filepath.Join(dir, "gl_20260930.tsv"), files.Options{})
	key := func(d string) model.BatchKey {
		return model.BatchKey{Pipeline: "gl.daily", BusinessDate: model.MustParseDate(d), BatchID: strings.ReplaceAll(d, "-", "")}
	}
	good := manifest.New(key("2026-09-30"), manifest.File{Name: "gl_20260930.tsv", Rows: 2, Bytes: int64(len(data)), Checksum: p.Checksum})
	bad := manifest.New(key("2026-10-01"), manifest.File{Name: "gl_20261001.tsv", Rows: 3, Bytes: int64(len(data)), Checksum: p.Checksum})
	write(t, filepath.Join(dir, "gl_20260930.manifest"), string(good.Encode()))
	write(t, filepath.Join(dir, "gl_20261001.manifest"), string(bad.Encode()))
	waitFor(t, 10*time.Second, "two signals", func() bool { return len(s.of(model.SignalPublished)) == 2 })
	stop()
	for _, e := range s.of(model.SignalPublished) {
		switch e.BatchID {
		case "20260930":
			if e.Attrs["anomaly"] != "" || e.Attrs["manifest_checked"] != "yes" || e.Rows != 2 || e.Checksum != p.Checksum {
				t.Errorf("matching manifest: %+v", e)
			}
		case "20261001":
			if e.Attrs["anomaly"] != "manifest_mismatch" || !strings.Contains(e.Attrs["anomaly_detail"], "3 rows") || e.Rows != 3 {
				t.Errorf("mismatching manifest: %+v", e)
			}
		}
	}
}

func TestWatchConfig(t *testing.T) {
	if _, err := watch.New(watch.Config{Role: "consumer", Contracts: contracts(t)}, newSink()); err == nil || !strings.Contains(err.Error(), "producer, exchange or receiver") {
		t.Errorf("bad role: %v", err)
	}
	set, _ := contract.NewSet(contract.Default("p"))
	if _, err := watch.New(watch.Config{Role: watch.Producer, Contracts: set}, newSink()); err == nil || !strings.Contains(err.Error(), "templates") {
		t.Errorf("no templates: %v", err)
	}
}

// flaky fails its first sends, as Kafka does while it is down.
type flaky struct {
	*sink
	mu    sync.Mutex
	fails int
}

func (f *flaky) Send(ctx context.Context, events []model.Event) error {
	f.mu.Lock()
	if f.fails > 0 {
		f.fails--
		f.mu.Unlock()
		return fmt.Errorf("kafka: not acknowledged")
	}
	f.mu.Unlock()
	return f.sink.Send(ctx, events)
}

// TestWatchSinkDown: while the sink fails, the watcher keeps running and
// the files pending; once it acknowledges, each event arrives once.
func TestWatchSinkDown(t *testing.T) {
	dir := t.TempDir()
	f := &flaky{sink: newSink(), fails: 3}
	w, stop := start(t, watch.Config{Role: watch.Exchange, Dir: dir, Contracts: contracts(t), Settle: 50 * time.Millisecond}, f)
	write(t, filepath.Join(dir, "account_balance_snapshot_20260930.csv"), "h\n1\n")
	write(t, filepath.Join(dir, "account_balance_snapshot_20260930.flag"), "")
	waitFor(t, 10*time.Second, "both events after the outage", func() bool { return len(f.snapshot()) == 2 })
	stop()
	f.mu.Lock()
	left := f.fails
	f.mu.Unlock()
	if left != 0 || w.Stats().Emitted != 2 {
		t.Fatalf("fails left %d, stats %+v", left, w.Stats())
	}
	for id, n := range f.byID {
		if n != 1 {
			t.Fatalf("event %s sent %d times", id, n)
		}
	}
}

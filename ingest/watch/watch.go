// Package watch turns files arriving in a directory tree into the boundary
// events they prove, for chains whose jobs emit no handoff events
// (docs/watch.md). A producer's watcher sees the temporary file
// (artifact.staged), the final name in place (artifact.finalized, with
// rows, bytes and sha256) and the signal (signal.published); an exchange's
// or receiver's watcher sees the data file (artifact.transferred) and the
// signal (signal.transferred) arrive.
//
// Names are read back into batches through the contracts' templates
// (contract.Identify); a file that matches no contract is ignored and
// counted. A file is final only when its size and modification time held
// for the settle window, so a copier writing in place is seen once, when
// done. Notifications come from fsnotify; a periodic rescan catches what
// they miss (overflows, network file systems). Event ids derive from the
// batch, the event type, the object and its content
// (model.DerivedEventID), so a restart sends nothing new; with a ledger
// file it sends nothing again at all.
package watch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/handoff-dev/handoff/ingest/files"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/model/manifest"
)

// Role says which side of the chain a directory is, and so which events
// its files prove.
type Role string

// Roles.
const (
	// Producer: where the producer writes; temp file, final file, signal.
	Producer Role = "producer"
	// Exchange: the transfer's landing directory at the receiving end.
	Exchange Role = "exchange"
	// Receiver: the consumer's inbox. Its files prove the same boundaries
	// as the exchange's (the data file and the signal arrived); the
	// events say role=receiver.
	Receiver Role = "receiver"
)

// ParseRole parses a role name.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case Producer, Exchange, Receiver:
		return r, nil
	}
	return "", fmt.Errorf("role %q: want producer, exchange or receiver", s)
}

// Contracts lists the contracts whose names the watcher matches;
// *contract.Set implements it.
type Contracts interface {
	Pipelines() []string
	For(pipeline string) *contract.Contract
}

// Sink sends events and returns once they are acknowledged;
// *emit.Emitter implements it.
type Sink interface {
	Send(ctx context.Context, events []model.Event) error
}

// Config configures a Watcher.
type Config struct {
	Role      Role
	Dir       string
	Contracts Contracts
	// Settle is how long a file's size and modification time must hold
	// before it counts as final (default 2s).
	Settle time.Duration
	// Rescan is the interval of the full rescan (default 30s).
	Rescan time.Duration
	// Component names the watcher in its events (default "handoff-watch").
	Component string
	// Ledger, when set, is a file recording the ids of acknowledged
	// events, so a restarted watcher sends none of them again.
	Ledger string
	// Workers probe files in parallel (default GOMAXPROCS).
	Workers int
	// Log receives what the watcher does; nil logs nothing.
	Log *slog.Logger
	// Restores is where restore-signal recorded its signal.restored
	// events. A signal restore-signal wrote carries a mark naming its
	// event; the watcher reports no signal.transferred for it only when
	// the mark is this signal's and the event it names is recorded here.
	// Nil: no mark is trusted, and a marked signal is reported with the
	// mark in its attrs.
	Restores Restores
	// RestoreGrace is how long a signal whose mark is its own waits for
	// its signal.restored to be found in Restores before it is reported
	// (default 2m).
	RestoreGrace time.Duration
}

// Stats counts what a watcher did.
type Stats struct {
	// Ignored counts files whose names match no contract (each file once).
	Ignored int64
	// Emitted counts events acknowledged by the sink.
	Emitted int64
	// Skipped counts events not sent because the ledger has them.
	Skipped int64
	// Anomalies counts events sent with an anomaly attribute.
	Anomalies int64
	// Unreadable counts final files that could not be read.
	Unreadable int64
	// Restored counts signals written by restore-signal (marked, and the
	// signal.restored the mark names recorded), which are not reported.
	Restored int64
	// MarkWaits counts looks at a marked signal whose signal.restored was
	// not found yet (the signal is looked at again).
	MarkWaits int64
}

// Watcher watches one directory tree. Run it once.
type Watcher struct {
	cfg      Config
	sink     Sink
	log      *slog.Logger
	patterns []*contract.Contract

	pending map[string]*seen   // files waiting to settle
	done    map[string]fileKey // files already reported, by their state
	ignored map[string]bool
	sent    map[string]bool // event ids acknowledged (ledger)
	ledger  *os.File

	ignoredN, emitted, skipped, anomalies, unreadable, restored atomic.Int64
	markWaits                                                   atomic.Int64

	markMu   sync.Mutex
	markSeen map[string]time.Time // marked signals waiting for their record: since when
}

// seen is a file waiting to settle: its last stat and since when it held.
type seen struct {
	key   fileKey
	since time.Time
}

// fileKey is what must hold for a file to be settled.
type fileKey struct {
	size  int64
	mtime time.Time
}

// New returns a Watcher sending to sink.
func New(cfg Config, sink Sink) (*Watcher, error) {
	if _, err := ParseRole(string(cfg.Role)); err != nil {
		return nil, err
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Second
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = 30 * time.Second
	}
	if cfg.Component == "" {
		cfg.Component = "handoff-watch"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.RestoreGrace <= 0 {
		cfg.RestoreGrace = 2 * time.Minute
	}
	w := &Watcher{cfg: cfg, sink: sink, log: cfg.Log, pending: map[string]*seen{}, done: map[string]fileKey{},
		ignored: map[string]bool{}, sent: map[string]bool{}, markSeen: map[string]time.Time{}}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	for _, p := range cfg.Contracts.Pipelines() {
		c := cfg.Contracts.For(p)
		if !c.Artifact.IsZero() || !c.Signal.IsZero() {
			w.patterns = append(w.patterns, c)
		}
	}
	if len(w.patterns) == 0 {
		return nil, errors.New("watch: no contract has artifact or signal templates: there is nothing to match file names against")
	}
	return w, nil
}

// Stats returns the counts so far; safe to call while Run runs.
func (w *Watcher) Stats() Stats {
	return Stats{Ignored: w.ignoredN.Load(), Emitted: w.emitted.Load(), Skipped: w.skipped.Load(),
		Anomalies: w.anomalies.Load(), Unreadable: w.unreadable.Load(), Restored: w.restored.Load(), MarkWaits: w.markWaits.Load()}
}

// Run watches until ctx ends, then returns nil (or the first error that
// stopped it: the directory gone, the sink failing past ctx).
func (w *Watcher) Run(ctx context.Context) error {
	if err := w.openLedger(); err != nil {
		return err
	}
	defer w.closeLedger()
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("fsnotify: %w", err)
	}
	defer fw.Close()
	if err := w.addTree(fw, w.cfg.Dir); err != nil {
		return err
	}
	w.scan(time.Now())
	tick := time.NewTicker(max(w.cfg.Settle/4, 10*time.Millisecond))
	defer tick.Stop()
	rescan := time.NewTicker(w.cfg.Rescan)
	defer rescan.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return errors.New("watch: fsnotify closed")
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				// Gone from this name; if it comes back it is looked at
				// again (and what it proves was already sent, by id).
				delete(w.pending, ev.Name)
				delete(w.done, ev.Name)
				continue
			}
			if st, err := os.Lstat(ev.Name); err == nil && st.IsDir() {
				// A new subdirectory: watch it, and take what it already holds.
				if err := w.addTree(fw, ev.Name); err != nil {
					w.log.Warn("watch: cannot watch new directory", "dir", ev.Name, "err", err)
				}
				w.scanDir(ev.Name, time.Now())
				continue
			}
			w.note(ev.Name, time.Now())
		case err, ok := <-fw.Errors:
			if !ok {
				return errors.New("watch: fsnotify closed")
			}
			// Usually an overflow: notifications were lost. Rescan now.
			w.log.Warn("watch: notifications lost, rescanning", "err", err)
			w.scan(time.Now())
		case now := <-tick.C:
			if err := w.settle(ctx, now); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				// Kafka down: the files stay pending and are tried again
				// at the next tick; nothing counts as reported until
				// acknowledged. Wait a settle window before trying again.
				w.log.Warn("watch: events not acknowledged, retrying", "err", err)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(w.cfg.Settle):
				}
			}
		case now := <-rescan.C:
			if _, err := os.Stat(w.cfg.Dir); err != nil {
				return err
			}
			w.scan(now)
		}
	}
}

// Once scans the tree, waits for every file it found to settle, reports
// them, and returns: for a cron job or a test.
func (w *Watcher) Once(ctx context.Context) error {
	if err := w.openLedger(); err != nil {
		return err
	}
	defer w.closeLedger()
	w.scan(time.Now())
	t := time.NewTicker(max(w.cfg.Settle/4, 10*time.Millisecond))
	defer t.Stop()
	for len(w.pending) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-t.C:
			if err := w.settle(ctx, now); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *Watcher) addTree(fw *fsnotify.Watcher, root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // vanished meanwhile
		}
		if d.IsDir() {
			if err := fw.Add(path); err != nil {
				return fmt.Errorf("add %s: %w", path, err)
			}
		}
		return nil
	})
}

// scan notes every file of the tree, and forgets the files that are gone,
// so that a long-running watcher's memory follows the directory, not its
// history.
func (w *Watcher) scan(now time.Time) {
	present := w.scanDir(w.cfg.Dir, now)
	for path := range w.done {
		if !present[path] {
			delete(w.done, path)
		}
	}
	for path := range w.ignored {
		if !present[path] {
			delete(w.ignored, path)
		}
	}
}

func (w *Watcher) scanDir(root string, now time.Time) map[string]bool {
	present := map[string]bool{}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			present[path] = true
			w.note(path, now)
		}
		return nil
	})
	return present
}

// match reads a name into its batch through the contracts.
func (w *Watcher) match(name string) (*contract.Contract, model.BatchKey, contract.NameKind) {
	for _, c := range w.patterns {
		if k, kind, ok := c.Identify(name); ok {
			return c, k, kind
		}
	}
	return nil, model.BatchKey{}, contract.NameNone
}

// note takes notice of a file: ignored, staged, or waiting to settle.
func (w *Watcher) note(path string, now time.Time) {
	if w.ignored[path] {
		return
	}
	// Lstat: a link is never followed out of the tree (nor within it).
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	fk := fileKey{size: st.Size(), mtime: st.ModTime()}
	if done, ok := w.done[path]; ok && done == fk {
		return
	}
	name := filepath.Base(path)
	if _, _, kind := w.match(name); kind != contract.NameNone {
		if p, ok := w.pending[path]; !ok || p.key != fk {
			w.pending[path] = &seen{key: fk, since: now}
		}
		return
	}
	if final, ok := files.FinalOf(name); ok {
		switch _, _, kind := w.match(final); kind {
		case contract.NameArtifact:
			if w.cfg.Role == Producer {
				w.pending[path] = &seen{key: fk, since: now.Add(-w.cfg.Settle)} // staged: no need to settle
			}
			return
		case contract.NameSignal:
			return // a signal being written: reported once it has its name
		}
	}
	w.ignored[path] = true
	w.ignoredN.Add(1)
	w.log.Debug("watch: no contract matches", "file", path)
}

// job is a file ready to report.
type job struct {
	path string
	key  fileKey
	out  []model.Event
	wait bool // a restored signal whose record is not found yet: look again
}

// settle reports the pending files that held still for the settle window.
func (w *Watcher) settle(ctx context.Context, now time.Time) error {
	var ready []*job
	for path, s := range w.pending {
		// Notifications restart a file's window as it changes (note); a
		// file is looked at again only when its window is over, so a tick
		// costs no system call per waiting file.
		if now.Sub(s.since) < w.cfg.Settle {
			continue
		}
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() {
			delete(w.pending, path)
			continue
		}
		fk := fileKey{size: st.Size(), mtime: st.ModTime()}
		if fk != s.key {
			s.key, s.since = fk, now
			continue
		}
		ready = append(ready, &job{path: path, key: fk})
	}
	if len(ready) == 0 {
		return nil
	}
	sort.Slice(ready, func(i, j int) bool { return ready[i].path < ready[j].path })
	w.probeAll(ctx, ready)
	var batch []model.Event
	for _, j := range ready {
		if j.wait {
			w.pending[j.path] = &seen{key: j.key, since: now}
			continue
		}
		delete(w.pending, j.path)
		w.done[j.path] = j.key
		for _, e := range j.out {
			if w.sent[e.ID] {
				w.skipped.Add(1)
				continue
			}
			batch = append(batch, e)
		}
	}
	if len(batch) == 0 {
		return nil
	}
	if err := w.sink.Send(ctx, batch); err != nil {
		// Not reported: take them up again at the next settle.
		for _, j := range ready {
			delete(w.done, j.path)
			w.pending[j.path] = &seen{key: j.key, since: now.Add(-w.cfg.Settle)}
		}
		return fmt.Errorf("send %d event(s): %w", len(batch), err)
	}
	w.emitted.Add(int64(len(batch)))
	for _, e := range batch {
		if e.Attrs["anomaly"] != "" {
			w.anomalies.Add(1)
		}
		w.log.Info("watch: emitted", "type", e.Type, "batch", e.Key().String(), "object", e.Object, "event_id", e.ID)
	}
	return w.record(batch)
}

// probeAll turns the ready files into events, Workers at a time.
func (w *Watcher) probeAll(ctx context.Context, jobs []*job) {
	ch := make(chan *job)
	var wg sync.WaitGroup
	for range min(w.cfg.Workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				j.out, j.wait = w.events(ctx, j.path)
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

// events says what one settled file proves.
func (w *Watcher) events(ctx context.Context, path string) ([]model.Event, bool) {
	name := filepath.Base(path)
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return nil, false // gone, or replaced by a link or a directory since it settled
	}
	c, key, kind := w.match(name)
	if kind == contract.NameNone {
		final, _ := files.FinalOf(name)
		c, key, _ = w.match(final)
		e := w.event(key, model.ArtifactStaged, name, st, "")
		return []model.Event{e}, false
	}
	rel, _ := filepath.Rel(w.cfg.Dir, filepath.Dir(path))
	if kind == contract.NameArtifact {
		f, err := files.Probe(ctx, path, files.Options{Format: files.FormatOf(name), Header: c.Rows.Header})
		if err != nil || f.Err != "" {
			w.unreadable.Add(1)
			w.log.Warn("watch: cannot read a final file", "file", path, "err", f.Err)
			return nil, false
		}
		typ := model.ArtifactTransferred
		if w.cfg.Role == Producer {
			typ = model.ArtifactFinalized
		}
		e := w.event(key, typ, name, st, f.Checksum)
		e.Rows, e.HasRows, e.Bytes, e.HasBytes, e.Checksum = f.Rows, true, f.Size, true, f.Checksum
		e.Attrs["location"] = rel
		return []model.Event{e}, false
	}
	content, st, err := files.ReadSmall(path, manifest.MaxSize)
	if err != nil {
		w.unreadable.Add(1)
		w.log.Warn("watch: cannot read a signal", "file", path, "err", err)
		return nil, false
	}
	mark, distrust := files.Mark(path), ""
	if mark != "" {
		var wait bool
		if distrust, wait = w.checkMark(ctx, path, mark, key, name, content); wait {
			return nil, true
		}
		if distrust == "" {
			// Written by restore-signal, which recorded it as
			// signal.restored (this id): not a delivery.
			w.restored.Add(1)
			w.log.Info("watch: a restored signal, already recorded", "file", path, "signal_restored", mark)
			return nil, false
		}
		w.log.Warn("watch: a signal marked as restored, but the mark is not proven: reported as it is", "file", path, "mark", mark, "why", distrust)
	}
	sum := sha256.Sum256(content)
	typ := model.SignalTransferred
	if w.cfg.Role == Producer {
		typ = model.SignalPublished
	}
	e := w.event(key, typ, name, st, hex.EncodeToString(sum[:]))
	e.Bytes, e.HasBytes = int64(len(content)), true
	e.Attrs["location"] = rel
	if mark != "" {
		e.Attrs["restored_mark"] = mark
		e.Attrs["restored_mark_unproven"] = distrust
	}
	if c.SignalContent == contract.SignalManifest {
		w.checkManifest(ctx, c, key, path, content, &e)
	}
	return []model.Event{e}, false
}

// checkManifest reads a manifest signal into e (rows, checksum) and
// compares it with the batch and the data file beside it; a mismatch is
// an anomaly, said in e's attrs.
func (w *Watcher) checkManifest(ctx context.Context, c *contract.Contract, key model.BatchKey, path string, content []byte, e *model.Event) {
	anomaly := func(detail string) {
		e.Attrs["anomaly"] = "manifest_mismatch"
		e.Attrs["anomaly_detail"] = detail
	}
	m, err := manifest.Parse(content)
	if err != nil {
		anomaly(err.Error())
		return
	}
	if m.Key != key {
		anomaly("the manifest names batch " + m.Key.String() + ", the signal's name derives from " + key.String())
		return
	}
	e.Rows, e.HasRows = m.Rows, true
	artifact, ok := c.ArtifactName(key)
	if !ok {
		return
	}
	mf, ok := m.File(artifact)
	if !ok {
		anomaly("the manifest does not list " + strconv.Quote(artifact))
		return
	}
	e.Checksum = mf.Checksum
	f, err := files.Probe(ctx, filepath.Join(filepath.Dir(path), artifact), files.Options{Format: files.FormatOf(artifact), Header: c.Rows.Header})
	if err != nil || !f.Readable {
		e.Attrs["manifest_checked"] = "no: " + strconv.Quote(artifact) + " not readable beside the signal"
		return
	}
	if f.Rows != mf.Rows || f.Size != mf.Bytes || f.Checksum != mf.Checksum {
		anomaly(fmt.Sprintf("the manifest says %d rows, %d bytes, %s; %s has %d rows, %d bytes, %s", mf.Rows, mf.Bytes, mf.Checksum, artifact, f.Rows, f.Size, f.Checksum))
		return
	}
	e.Attrs["manifest_checked"] = "yes"
}

// event builds an event of the watcher's side; its id derives from the
// batch, the type, the object and content.
func (w *Watcher) event(key model.BatchKey, typ model.EventType, object string, st fs.FileInfo, content string) model.Event {
	sys := model.Exchange
	if w.cfg.Role == Producer {
		sys = model.Producer
	}
	return model.Event{
		Spec: model.SpecV1, ID: model.DerivedEventID(key.String(), string(typ), object, content), Type: typ,
		Time:     files.ChangeTime(st).UTC().Truncate(time.Millisecond),
		Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: key.BatchID,
		System: sys, Component: w.cfg.Component, Object: object,
		Attrs: map[string]string{"role": string(w.cfg.Role)},
	}
}

func (w *Watcher) openLedger() error {
	if w.cfg.Ledger == "" || w.ledger != nil {
		return nil
	}
	f, err := os.OpenFile(w.cfg.Ledger, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id := sc.Text(); id != "" {
			w.sent[id] = true
		}
	}
	if err := sc.Err(); err != nil {
		f.Close()
		return fmt.Errorf("read ledger %s: %w", w.cfg.Ledger, err)
	}
	w.ledger = f
	return nil
}

func (w *Watcher) closeLedger() {
	if w.ledger != nil {
		w.ledger.Close()
		w.ledger = nil
	}
}

// record appends acknowledged ids to the ledger.
func (w *Watcher) record(events []model.Event) error {
	for _, e := range events {
		w.sent[e.ID] = true
	}
	if w.ledger == nil {
		return nil
	}
	var b []byte
	for _, e := range events {
		b = append(append(b, e.ID...), '\n')
	}
	if _, err := w.ledger.Write(b); err != nil {
		return fmt.Errorf("watch: ledger %s: %w", w.cfg.Ledger, err)
	}
	if err := w.ledger.Sync(); err != nil {
		return fmt.Errorf("watch: ledger %s: %w", w.cfg.Ledger, err)
	}
	return nil
}

package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/handoff-dev/handoff/store/history"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/model"
)

// Restores looks up a recorded signal.restored event by id: the record a
// restored signal's mark (files.MarkAttr) must name before the watcher
// believes it. The mark alone proves nothing: anyone who can write the
// file can set it, and cp -a or rsync -X carry it to the next directory.
type Restores interface {
	// Restored returns the recorded signal.restored of batch key with id,
	// and false when none is (yet).
	Restored(ctx context.Context, key model.BatchKey, id string) (model.Event, bool, error)
}

// EventsFile is Restores over a JSON-lines events file, the one
// `handoff restore-signal --events FILE` appends its signal.restored to.
// The file is read at each lookup: restores are rare, and a restore
// recorded after the watcher started is found.
type EventsFile string

// Restored scans the file for the event with id.
func (p EventsFile) Restored(ctx context.Context, _ model.BatchKey, id string) (model.Event, bool, error) {
	f, err := os.Open(string(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return model.Event{}, false, nil
		}
		return model.Event{}, false, fmt.Errorf("restores: %w", err)
	}
	defer f.Close()
	var found model.Event
	ok := false
	_, err = jsonl.Read(ctx, f, jsonl.Options{Workers: 1}, func(_ int, e *model.Event, err error) error {
		if err == nil && e.ID == id && e.Type == model.SignalRestored {
			found, ok = *e, true
		}
		return nil // a bad line is not this watcher's to judge
	})
	if err != nil {
		return model.Event{}, false, fmt.Errorf("restores: read %s: %w", p, err)
	}
	return found, ok, nil
}

// restoredID is the id restore-signal gives the signal.restored of a
// signal written with content: derived from the batch, the name and the
// content's sha256, so a mark copied onto another file, another name or
// other content names an event that does not describe it.
func restoredID(key model.BatchKey, name string, content []byte) string {
	sum := sha256.Sum256(content)
	return model.DerivedEventID(key.String(), string(model.SignalRestored), name, hex.EncodeToString(sum[:]))
}

// checkMark says why a signal's mark cannot be trusted, "" when it can:
// the mark must be the id derived from this very signal, and that event
// must be recorded, for this batch and this name. wait is true when the
// mark is the signal's own but its event is not found yet (restore-signal
// records it just after the rename; ingest stores it a moment later): the
// signal is looked at again until Config.RestoreGrace has passed since the
// mark was first seen.
func (w *Watcher) checkMark(ctx context.Context, path, mark string, key model.BatchKey, name string, content []byte) (why string, wait bool) {
	if want := restoredID(key, name, content); mark != want {
		return fmt.Sprintf("the mark %q is not the signal.restored id of this signal (%s)", mark, want), false
	}
	if w.cfg.Restores == nil {
		return "no record of restores to check the mark against (--restored-events, --restored-clickhouse)", false
	}
	e, ok, err := w.cfg.Restores.Restored(ctx, key, mark)
	switch {
	case err != nil:
		why = err.Error()
	case !ok:
		why = fmt.Sprintf("no signal.restored %s is recorded", mark)
	case e.Key() != key || e.Object != name:
		return fmt.Sprintf("the recorded signal.restored %s is of %s %s, not %s %s", mark, e.Key(), e.Object, key, name), false
	case !sameDir(e.Attrs["location"], filepath.Dir(path)):
		// cp -a or rsync -X carried the signal and its mark to another
		// directory: the restore was of the one it names.
		return fmt.Sprintf("the recorded signal.restored %s restored it in %s, not in %s", mark, e.Attrs["location"], filepath.Dir(path)), false
	default:
		w.forgetMark(path)
		return "", false
	}
	now := time.Now()
	w.markMu.Lock()
	first, seen := w.markSeen[path]
	if !seen {
		first = now
		w.markSeen[path] = now
	}
	w.markMu.Unlock()
	if now.Sub(first) < w.cfg.RestoreGrace {
		w.markWaits.Add(1)
		return why, true
	}
	w.forgetMark(path)
	return fmt.Sprintf("%s after %v", why, w.cfg.RestoreGrace), false
}

func (w *Watcher) forgetMark(path string) {
	w.markMu.Lock()
	delete(w.markSeen, path)
	w.markMu.Unlock()
}

// sameDir reports whether the restore's recorded location is dir. A
// relative location (restore-signal's --dir as typed, relative to where it
// ran) cannot be placed and is not held against the mark.
func sameDir(location, dir string) bool {
	if location == "" || !filepath.IsAbs(location) {
		return true
	}
	a, err1 := os.Stat(location)
	b, err2 := os.Stat(dir)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// StoredRestores is Restores over the stored history: the batch's events
// in ClickHouse, where ingest put the signal.restored restore-signal sent
// to Kafka.
func StoredRestores(h *history.Store) Restores { return storedRestores{h} }

type storedRestores struct{ h *history.Store }

func (r storedRestores) Restored(ctx context.Context, key model.BatchKey, id string) (model.Event, bool, error) {
	var found model.Event
	ok := false
	err := r.h.BatchEvents(ctx, key, func(e *model.Event) error {
		if e.ID == id && e.Type == model.SignalRestored {
			found, ok = *e, true
		}
		return nil
	})
	return found, ok, err
}

package watch_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/ingest/files"
	"github.com/handoff-dev/handoff/ingest/watch"
	"github.com/handoff-dev/handoff/model"
)

var key0929 = model.BatchKey{Pipeline: "abs.daily", BusinessDate: model.MustParseDate("2026-09-29"), BatchID: "20260929"}

// restoredMark is the mark restore-signal sets on the signal name it
// writes with content: the id of its signal.restored.
func restoredMark(name, content string) string {
	return remedy.EventID(key0929, name, []byte(content))
}

// restoresFile is an events file holding the signal.restored of the
// batch's signal name written with content, as restore-signal --events
// appends it.
func restoresFile(t testing.TB, name, content string) watch.EventsFile {
	t.Helper()
	return restoresFileAt(t, name, content, "")
}

// restoresFileAt is restoresFile with the receiver directory the restore
// recorded (attrs.location).
func restoresFileAt(t testing.TB, name, content, location string) watch.EventsFile {
	t.Helper()
	line := fmt.Sprintf(`{"spec":"handoff/v1","event_id":%q,"type":"signal.restored","time":"2026-10-01T00:40:00.000Z","pipeline":"abs.daily","business_date":"2026-09-29","batch_id":"20260929","system":"operator","component":"handoff-restore","object":%q,"attrs":{"location":%q}}`,
		restoredMark(name, content), name, location)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	write(t, path, `{"not":"an event"}`+"\n"+line+"\n")
	return watch.EventsFile(path)
}

// TestWatchForgedRestoredMark: the mark restore-signal sets is a claim, not
// a proof (anyone who can write the file sets it, cp -a carries it). A
// signal whose mark is forged, copied onto other content, names no
// recorded event, or is checked with no record at all, is reported as it
// is, with the mark in its attrs; only a mark that is the signal's own and
// names a recorded signal.restored suppresses the report.
func TestWatchForgedRestoredMark(t *testing.T) {
	const name = "account_balance_snapshot_20260929.flag"
	for _, tt := range []struct {
		what     string
		mark     string
		content  string
		restores func(t *testing.T, dir string) watch.Restores
		reported bool
		why      string
	}{
		{"forged mark", "restored-id", "", func(t *testing.T, _ string) watch.Restores { return restoresFile(t, name, "") }, true, "not the signal.restored id"},
		{"mark of other content", restoredMark(name, ""), "x\n", func(t *testing.T, _ string) watch.Restores { return restoresFile(t, name, "") }, true, "not the signal.restored id"},
		{"right mark, nothing recorded", restoredMark(name, ""), "", func(t *testing.T, _ string) watch.Restores {
			return watch.EventsFile(filepath.Join(t.TempDir(), "none.jsonl"))
		}, true, "no signal.restored"},
		{"right mark, no record configured", restoredMark(name, ""), "", func(*testing.T, string) watch.Restores { return nil }, true, "no record of restores"},
		{"right mark, recorded for another directory (cp -a downstream)", restoredMark(name, ""), "", func(t *testing.T, _ string) watch.Restores { return restoresFileAt(t, name, "", t.TempDir()) }, true, "restored it in"},
		{"right mark, recorded", restoredMark(name, ""), "", func(t *testing.T, _ string) watch.Restores { return restoresFile(t, name, "") }, false, ""},
		{"right mark, recorded for this directory", restoredMark(name, ""), "", func(t *testing.T, dir string) watch.Restores { return restoresFileAt(t, name, "", dir) }, false, ""},
	} {
		t.Run(tt.what, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := files.WriteAtomic(dir, name, []byte(tt.content), 0o644, tt.mark); err != nil {
				t.Fatal(err)
			}
			if files.Mark(filepath.Join(dir, name)) != tt.mark {
				t.Fatalf("this file system keeps no user xattrs: cannot test the mark")
			}
			s := newSink()
			w, err := watch.New(watch.Config{Role: watch.Receiver, Dir: dir, Contracts: contracts(t), Settle: 10 * time.Millisecond, Restores: tt.restores(t, dir),
				RestoreGrace: 50 * time.Millisecond}, s)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Once(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := s.of(model.SignalTransferred)
			if !tt.reported {
				if len(got) != 0 || w.Stats().Restored != 1 {
					t.Fatalf("a proven restored signal: %d signal.transferred, %d restored; want none and 1", len(got), w.Stats().Restored)
				}
				return
			}
			if len(got) != 1 || w.Stats().Restored != 0 {
				t.Fatalf("%d signal.transferred, %d counted as restored; want the signal reported", len(got), w.Stats().Restored)
			}
			if got[0].Attrs["restored_mark"] != tt.mark || !strings.Contains(got[0].Attrs["restored_mark_unproven"], tt.why) {
				t.Errorf("attrs %v: want the mark and why it is unproven (%q)", got[0].Attrs, tt.why)
			}
		})
	}
}

// TestWatchRunningNeverFollowsLinks: with the watcher running (the
// notification path, not only the rescan), links planted under the
// contract's names pointing outside the tree are never read: no event
// carries the rows, bytes or checksum of /etc/passwd or a secret.
func TestWatchRunningNeverFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	secretData := filepath.Join(outside, "passwd.csv")
	write(t, secretData, "h\nroot:x:0:0\n")
	secretFlag := filepath.Join(outside, "shadow")
	write(t, secretFlag, "root:$6$...\n")
	s := newSink()
	_, stop := start(t, watch.Config{Role: watch.Receiver, Dir: dir, Contracts: contracts(t), Settle: 50 * time.Millisecond, Rescan: time.Hour}, s)
	if err := os.Symlink(secretData, filepath.Join(dir, "account_balance_snapshot_20261120.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secretFlag, filepath.Join(dir, "account_balance_snapshot_20261121.flag")); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Symlink(outside, sub); err != nil { // a link to a directory outside
		t.Fatal(err)
	}
	// A real file noted after the links: once it is reported, the links
	// were noted (in order) and skipped.
	write(t, filepath.Join(dir, "account_balance_snapshot_20261122.flag"), "")
	waitFor(t, 10*time.Second, "the real signal reported", func() bool { return len(s.of(model.SignalTransferred)) == 1 })
	stop()
	for _, e := range s.snapshot() {
		if e.Object != "account_balance_snapshot_20261122.flag" {
			t.Errorf("event %s for %s: a link out of the tree was followed", e.Type, e.Object)
		}
	}
}

// TestWatchHugeSignal: a 2 GiB sparse signal is refused by its size before
// anything is read, and the log says why (it used to be read whole into
// memory, then reported with err=<nil>).
func TestWatchHugeSignal(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "account_balance_snapshot_20260929.flag"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var log strings.Builder
	s := newSink()
	w, err := watch.New(watch.Config{Role: watch.Receiver, Dir: dir, Contracts: contracts(t), Settle: 10 * time.Millisecond, Log: textLog(&log)}, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(s.snapshot()) != 0 || w.Stats().Unreadable != 1 {
		t.Fatalf("%d events, %d unreadable; want none and 1", len(s.snapshot()), w.Stats().Unreadable)
	}
	if !strings.Contains(log.String(), "over the limit") || strings.Contains(log.String(), "err=<nil>") {
		t.Errorf("log does not say the signal is over the limit:\n%s", log.String())
	}
}

func textLog(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestWatchRestoreRecordedLate: restore-signal renames the signal into
// place, then records signal.restored; the watcher may look first. A
// signal whose mark is its own waits for the record (up to RestoreGrace)
// instead of being reported as transferred.
func TestWatchRestoreRecordedLate(t *testing.T) {
	const name = "account_balance_snapshot_20260929.flag"
	dir := t.TempDir()
	records := filepath.Join(t.TempDir(), "events.jsonl")
	write(t, records, "")
	s := newSink()
	w, stop := start(t, watch.Config{Role: watch.Receiver, Dir: dir, Contracts: contracts(t), Settle: 20 * time.Millisecond,
		Restores: watch.EventsFile(records), RestoreGrace: time.Minute}, s)
	if _, err := files.WriteAtomic(dir, name, nil, 0o644, restoredMark(name, "")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the watcher looking for the restore's record", func() bool { return w.Stats().MarkWaits > 0 })
	recorded, err := os.ReadFile(string(restoresFile(t, name, "")))
	if err != nil {
		t.Fatal(err)
	}
	write(t, records, string(recorded))
	waitFor(t, 10*time.Second, "the restored signal recognised once recorded", func() bool { return w.Stats().Restored == 1 })
	stop()
	if got := s.of(model.SignalTransferred); len(got) != 0 {
		t.Errorf("a restored signal recorded late was reported as transferred: %+v", got)
	}
}

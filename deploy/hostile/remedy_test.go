package hostile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

const seedContract = `pipeline: account-balance-snapshot.daily
schedule: daily
timezone: Asia/Shanghai
batch_id: "{yyyymmdd}"
artifact: "%s"
signal: "%s"
deadlines:
  signal_delivered: "business_date + 1d 06:00"
rows:
  min: 1
  header: true
`

// receiverCase is the seed case on disk, as restore-signal's tests build
// it: 2026-09-29 delivered, 2026-09-30 stopped after the transfer, the
// data file at the receiver, the flag missing.
type receiverCase struct {
	dir, recv, events, contract string
}

func newReceiverCase(t *testing.T, artifact, signal string) *receiverCase {
	t.Helper()
	dir := t.TempDir()
	rc := &receiverCase{dir: dir, recv: filepath.Join(dir, "inbox"), events: filepath.Join(dir, "events.jsonl"), contract: filepath.Join(dir, "abs.yaml")}
	var data bytes.Buffer
	data.WriteString("account_id,snapshot_date,balance\n")
	for i := range 500 {
		fmt.Fprintf(&data, "%08d,2026-09-30,%d.%02d\n", i, i*37%100000, i%100)
	}
	sum := sha256.Sum256(data.Bytes())
	checksum := "sha256:" + hex.EncodeToString(sum[:])
	write(t, rc.contract, fmt.Sprintf(seedContract, artifact, signal))
	key := func(d string) model.BatchKey {
		return model.BatchKey{Pipeline: "account-balance-snapshot.daily", BusinessDate: model.MustParseDate(d), BatchID: strings.ReplaceAll(d, "-", "")}
	}
	var lines []byte
	for _, d := range []string{"2026-09-29", "2026-09-30"} {
		k := key(d)
		name := func(tmpl string) string { return strings.ReplaceAll(tmpl, "{batch_id}", k.BatchID) }
		n := 0
		add := func(typ model.EventType, sys model.System, at, obj string, fill func(*model.Event)) {
			n++
			e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("h-%s-%d", k.BatchID, n), Type: typ, Pipeline: k.Pipeline, BusinessDate: k.BusinessDate,
				BatchID: k.BatchID, System: sys, Component: string(sys) + "-1", Object: obj}
			e.Time, _ = time.Parse(time.RFC3339, d+"T"+at+"Z")
			if fill != nil {
				fill(&e)
			}
			lines = append(e.AppendJSON(lines), '\n')
		}
		add(model.JobSucceeded, model.Producer, "17:14:05", "", nil)
		add(model.ArtifactFinalized, model.Producer, "17:14:02", name(artifact), func(e *model.Event) {
			e.Rows, e.HasRows, e.Bytes, e.HasBytes, e.Checksum = 500, true, int64(data.Len()), true, checksum
		})
		add(model.SignalPublished, model.Producer, "17:14:06", name(signal), nil)
		add(model.ArtifactTransferred, model.Exchange, "17:20:05", name(artifact), func(e *model.Event) {
			e.Bytes, e.HasBytes, e.Checksum = int64(data.Len()), true, checksum
		})
		if d == "2026-09-29" {
			add(model.SignalTransferred, model.Exchange, "17:20:06", name(signal), nil)
			add(model.BatchIdentified, model.Consumer, "17:25:00", "", nil)
			add(model.ConsumeSucceeded, model.Consumer, "17:30:00", "", func(e *model.Event) { e.Rows, e.HasRows = 500, true })
		}
	}
	write(t, rc.events, string(lines))
	os.MkdirAll(rc.recv, 0o755)
	if !strings.Contains(artifact, "/") {
		write(t, filepath.Join(rc.recv, strings.ReplaceAll(artifact, "{batch_id}", "20260930")), data.String())
	}
	return rc
}

func (rc *receiverCase) restore(t *testing.T, extra ...string) result {
	t.Helper()
	return handoff(t, nil, append([]string{"restore-signal", "--batch", "account-balance-snapshot.daily/2026-09-30/20260930", "--dir", rc.recv,
		"--contract", rc.contract, "--events", rc.events, "--as-of", "2026-10-03T00:00:00Z", "--settle", "50ms"}, extra...)...)
}

// tree lists every path under dir with its size, to compare before and
// after a run.
func tree(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out[p] = fi.Size()
		}
		return nil
	})
	return out
}

const (
	seedArtifact = "account_balance_snapshot_{batch_id}.csv"
	seedSignal   = "account_balance_snapshot_{batch_id}.flag"
	flag0930     = "account_balance_snapshot_20260930.flag"
)

// TestRestoreControl: the case restores as it should, so the refusals
// below are refusals of the hostile part, not of a broken case.
func TestRestoreControl(t *testing.T) {
	rc := newReceiverCase(t, seedArtifact, seedSignal)
	if r := rc.restore(t); r.code != 0 || !strings.Contains(r.stdout, "every precondition is proven") {
		t.Fatalf("dry run of the seed case: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := rc.restore(t, "--apply", "--reason", "hostile control"); r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(rc.recv, flag0930)); err != nil {
		t.Fatalf("the flag was not restored: %v", err)
	}
}

// TestRestoreNeverWritesThroughLinks: a link at the signal's path
// (dangling, or to an empty file outside the receiver) is never written
// through, and a data file that is a link to a file outside the receiver
// is no proof: nothing outside the receiver changes, no flag appears.
func TestRestoreNeverWritesThroughLinks(t *testing.T) {
	t.Run("dangling link at the signal", func(t *testing.T) {
		rc := newReceiverCase(t, seedArtifact, seedSignal)
		target := filepath.Join(rc.dir, "outside", "planted.flag")
		os.MkdirAll(filepath.Dir(target), 0o755)
		if err := os.Symlink(target, filepath.Join(rc.recv, flag0930)); err != nil {
			t.Fatal(err)
		}
		r := rc.restore(t, "--apply", "--reason", "hostile")
		if r.code == 0 {
			t.Errorf("apply over a dangling link: exit 0\n%s", r.stdout)
		}
		if _, err := os.Lstat(target); err == nil {
			t.Errorf("the link's target %s was written through", target)
		}
	})
	t.Run("link to an empty file outside", func(t *testing.T) {
		rc := newReceiverCase(t, seedArtifact, seedSignal)
		target := write(t, filepath.Join(rc.dir, "outside", "empty"), "")
		if err := os.Symlink(target, filepath.Join(rc.recv, flag0930)); err != nil {
			t.Fatal(err)
		}
		before := tree(t, filepath.Dir(target))
		rc.restore(t, "--apply", "--reason", "hostile")
		if after := tree(t, filepath.Dir(target)); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("outside the receiver changed: %v -> %v", before, after)
		}
		if fi, err := os.Lstat(filepath.Join(rc.recv, flag0930)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the planted link was replaced or removed: %v %v", fi, err)
		}
	})
	t.Run("data file is a link out of the receiver", func(t *testing.T) {
		rc := newReceiverCase(t, seedArtifact, seedSignal)
		data := filepath.Join(rc.recv, "account_balance_snapshot_20260930.csv")
		outside := filepath.Join(rc.dir, "elsewhere.csv")
		if err := os.Rename(data, outside); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, data); err != nil {
			t.Fatal(err)
		}
		r := rc.restore(t, "--apply", "--reason", "hostile")
		if r.code == 0 {
			t.Errorf("a data file that is a link out of the receiver proved the restore:\n%s", r.stdout)
		}
		if _, err := os.Lstat(filepath.Join(rc.recv, flag0930)); err == nil {
			t.Errorf("a flag was written on the proof of a link")
		}
	})
}

// TestRestoreTemplateTraversal: templates that climb out of the receiver
// (../, an absolute path, a subdirectory) write nothing outside it,
// whether the contract is refused at load or the restore is refused.
func TestRestoreTemplateTraversal(t *testing.T) {
	for _, signal := range []string{"../escape_{batch_id}.flag", "/tmp/handoff-hostile-abs_{batch_id}.flag", "sub/x_{batch_id}.flag", "..\\\\x_{batch_id}.flag"} {
		t.Run(signal, func(t *testing.T) {
			rc := newReceiverCase(t, seedArtifact, signal)
			before := tree(t, rc.dir)
			r := rc.restore(t, "--apply", "--reason", "hostile")
			if r.code == 0 {
				t.Errorf("signal template %q: restored:\n%s", signal, r.stdout)
			}
			after := tree(t, rc.dir)
			for p := range after {
				if _, ok := before[p]; !ok && p != rc.events {
					t.Errorf("signal template %q: %s appeared", signal, p)
				}
			}
			if _, err := os.Lstat("/tmp/handoff-hostile-abs_20260930.flag"); err == nil {
				os.Remove("/tmp/handoff-hostile-abs_20260930.flag")
				t.Errorf("signal template %q: wrote an absolute path", signal)
			}
		})
	}
}

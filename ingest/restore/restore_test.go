package restore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/ingest/restore"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

const (
	pipeline  = "account-balance-snapshot.daily"
	dataName  = "account_balance_snapshot_20260930.csv"
	flagName  = "account_balance_snapshot_20260930.flag"
	contractY = `pipeline: account-balance-snapshot.daily
schedule: daily
timezone: Asia/Shanghai
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
deadlines:
  signal_delivered: "business_date + 1d 06:00"
rows:
  min: 1
  header: true
`
)

var key = model.BatchKey{Pipeline: pipeline, BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}

// fileHistory reads the events file at each Batch: the remediation's
// read of a JSON-lines history.
type fileHistory struct {
	path string
	set  *contract.Set
}

func (h fileHistory) Batch(ctx context.Context, k model.BatchKey, asOf time.Time) (replay.Diagnosis, []replay.Diagnosis, error) {
	f, err := os.Open(h.path)
	if err != nil {
		return replay.Diagnosis{}, nil, err
	}
	defer f.Close()
	col := remedy.NewCollector(h.set, k, asOf, remedy.Scope{})
	if _, err := jsonl.Read(ctx, f, jsonl.Options{}, func(_ int, e *model.Event, err error) error {
		if err != nil {
			return err
		}
		return col.Add(e)
	}); err != nil {
		return replay.Diagnosis{}, nil, err
	}
	d, all, ok := col.Batch()
	if !ok {
		return d, nil, errors.New("no events for " + k.String())
	}
	return d, all, nil
}

func csvData(n int) []byte {
	var b bytes.Buffer
	b.WriteString("account_id,snapshot_date,balance\n")
	for i := range n {
		fmt.Fprintf(&b, "%08d,2026-09-30,%d.%02d\n", i, i*37%100000, i%100)
	}
	return b.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// seedCase writes the seed case: 2026-09-29 delivered, 2026-09-30 stopped
// after the transfer, the data file at the receiver.
type seedCase struct {
	recv, events string
	c            *contract.Contract
	h            fileHistory
	data         []byte
}

func newSeed(t *testing.T) *seedCase {
	t.Helper()
	dir := t.TempDir()
	sc := &seedCase{recv: filepath.Join(dir, "inbox"), events: filepath.Join(dir, "events.jsonl"), data: csvData(300)}
	if err := os.Mkdir(sc.recv, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := contract.Parse("abs.yaml", []byte(contractY))
	if err != nil {
		t.Fatal(err)
	}
	set, err := contract.NewSet(c)
	if err != nil {
		t.Fatal(err)
	}
	sc.c, sc.h = c, fileHistory{path: sc.events, set: set}
	var buf []byte
	for _, date := range []string{"2026-09-29", "2026-09-30"} {
		d := model.MustParseDate(date)
		mk := func(n int, typ model.EventType, sys model.System, at, obj string) model.Event {
			e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("t-%s-%d", d.Compact(), n), Type: typ, Pipeline: pipeline, BusinessDate: d,
				BatchID: d.Compact(), System: sys, Component: string(sys) + "-1", Object: obj}
			e.Time, _ = time.Parse(time.RFC3339, date+"T"+at+"Z")
			return e
		}
		f, g := "account_balance_snapshot_"+d.Compact()+".csv", "account_balance_snapshot_"+d.Compact()+".flag"
		fin := mk(2, model.ArtifactFinalized, model.Producer, "17:14:02", f)
		fin.Rows, fin.HasRows, fin.Bytes, fin.HasBytes, fin.Checksum = 300, true, int64(len(sc.data)), true, sha(sc.data)
		tr := mk(4, model.ArtifactTransferred, model.Exchange, "17:20:05", f)
		tr.Bytes, tr.HasBytes, tr.Checksum = int64(len(sc.data)), true, sha(sc.data)
		evs := []model.Event{mk(1, model.JobSucceeded, model.Producer, "17:14:05", ""), fin, mk(3, model.SignalPublished, model.Producer, "17:14:06", g), tr}
		if date == "2026-09-29" {
			cs := mk(7, model.ConsumeSucceeded, model.Consumer, "17:30:00", "")
			cs.Rows, cs.HasRows = 300, true
			evs = append(evs, mk(5, model.SignalTransferred, model.Exchange, "17:20:06", g), mk(6, model.BatchIdentified, model.Consumer, "17:25:00", ""), cs)
		}
		for i := range evs {
			buf = append(evs[i].AppendJSON(buf), '\n')
		}
	}
	if err := os.WriteFile(sc.events, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sc.recv, dataName), sc.data, 0o644); err != nil {
		t.Fatal(err)
	}
	return sc
}

func (sc *seedCase) request(rec restore.Recorder) restore.Request {
	return restore.Request{Key: key, Dir: sc.recv, Contract: sc.c, AsOf: time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC), Apply: true,
		Who: remedy.Who{User: "test", Reason: "test"}, Recorder: rec}
}

// hookRecorder records to the events file, running before first when
// asked whether it can: the moment after the proof and before the write.
type hookRecorder struct {
	restore.FileRecorder
	before func()
}

func (r *hookRecorder) Ready(ctx context.Context) error {
	if r.before != nil {
		r.before()
	}
	return r.FileRecorder.Ready(ctx)
}

func TestRunRestoresAndRecords(t *testing.T) {
	sc := newSeed(t)
	rec := &restore.FileRecorder{Path: sc.events}
	defer rec.Close()
	res, err := restore.Run(context.Background(), sc.h, sc.request(rec))
	if err != nil || res.Outcome != restore.Restored || res.Event == nil || res.RecordedTo != sc.events {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(sc.recv, flagName)); err != nil || len(b) != 0 {
		t.Fatalf("flag: %q, %v", b, err)
	}
	evs, _ := os.ReadFile(sc.events)
	if !bytes.Contains(evs, []byte(`"event_id":"`+res.Event.ID+`"`)) {
		t.Fatal("signal.restored not appended to the events file")
	}
	ents, _ := os.ReadDir(sc.recv)
	if len(ents) != 2 {
		t.Fatalf("receiver holds %d names, want the data file and the flag (no temporary file left)", len(ents))
	}
	// Evaluated as of a time, the restore declares completion at that time,
	// not at the wall clock's.
	if want := sc.request(rec).AsOf; !res.Event.Time.Equal(want) {
		t.Errorf("signal.restored at %v, want the evaluation time %v", res.Event.Time, want)
	}
}

// TestRunRefusesFileChangedAfterProof: the data file rewritten between
// the proof and the write (same size, same modification time, other
// bytes) gets no signal and no record.
func TestRunRefusesFileChangedAfterProof(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, path string, data []byte)
	}{
		{"rewritten in place, same size and mtime", func(t *testing.T, path string, data []byte) {
			st, _ := os.Stat(path)
			other := bytes.Clone(data)
			other[len(other)-2] ^= 1
			if err := os.WriteFile(path, other, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by another file of the same bytes", func(t *testing.T, path string, data []byte) {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"removed", func(t *testing.T, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := newSeed(t)
			before, _ := os.ReadFile(sc.events)
			rec := &hookRecorder{FileRecorder: restore.FileRecorder{Path: sc.events}, before: func() { tt.change(t, filepath.Join(sc.recv, dataName), sc.data) }}
			defer rec.Close()
			res, err := restore.Run(context.Background(), sc.h, sc.request(rec))
			if err != nil || res.Outcome != restore.Refused || !slices.Contains(res.Plan.Unproven(), remedy.PreChecksum) {
				t.Fatalf("Run: outcome %s, unproven %v, %v; want refused on checksum_unchanged", res.Outcome, res.Plan.Unproven(), err)
			}
			var detail string
			for _, r := range res.Plan.Preconditions {
				if r.Name == remedy.PreChecksum {
					detail = r.Detail
				}
			}
			if !strings.Contains(detail, "changed since it was proven") {
				t.Fatalf("checksum_unchanged says %q", detail)
			}
			if _, err := os.Lstat(filepath.Join(sc.recv, flagName)); err == nil {
				t.Fatal("a signal was written for a file that changed after its proof")
			}
			if after, _ := os.ReadFile(sc.events); !bytes.Equal(after, before) {
				t.Fatal("a restore was recorded for a file that changed after its proof")
			}
			ents, _ := os.ReadDir(sc.recv)
			for _, e := range ents {
				if e.Name() != dataName {
					t.Fatalf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

// TestRunRefusesUnrecordable: when the record cannot be written, no signal
// is: an events file path that is a directory, or under a file, or Kafka
// that does not answer.
func TestRunRefusesUnrecordable(t *testing.T) {
	for _, tt := range []struct {
		name string
		rec  func(sc *seedCase) restore.Recorder
		want string
	}{
		{"events path is a directory", func(sc *seedCase) restore.Recorder { return &restore.FileRecorder{Path: sc.recv} }, "is a directory"},
		{"events path under a file", func(sc *seedCase) restore.Recorder {
			return &restore.FileRecorder{Path: filepath.Join(sc.events, "x.jsonl")}
		}, "not a directory"},
		{"Kafka that does not answer", func(*seedCase) restore.Recorder {
			return &restore.KafkaRecorder{Brokers: []string{"127.0.0.1:1"}, Timeout: 5 * time.Second}
		}, "127.0.0.1:1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := newSeed(t)
			rec := tt.rec(sc)
			defer rec.Close()
			_, err := restore.Run(context.Background(), sc.h, sc.request(rec))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "nothing written") {
				t.Fatalf("Run: %v; want an error naming %q and saying nothing was written", err, tt.want)
			}
			if _, err := os.Lstat(filepath.Join(sc.recv, flagName)); err == nil {
				t.Fatal("a signal was written whose restore cannot be recorded")
			}
		})
	}
}

// TestProbeLinks: names at the receiver are never followed.
func TestProbeLinks(t *testing.T) {
	sc := newSeed(t)
	outside := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(outside, sc.data, 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(sc.recv, dataName)
	os.Remove(data)
	if err := os.Symlink(outside, data); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sc.recv, "nowhere"), filepath.Join(sc.recv, flagName)); err != nil {
		t.Fatal(err)
	}
	f, proof, err := restore.Probe(context.Background(), sc.recv, sc.c, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a := f.Artifact; !a.Exists || a.Regular || a.Readable || a.Link != outside || a.Dangling || a.Checksum != "" {
		t.Fatalf("linked data file: %+v", a)
	}
	if s := f.Signal; !s.Exists || s.Regular || s.Link == "" || !s.Dangling {
		t.Fatalf("dangling link as the signal: %+v", s)
	}
	if proof.Identity != (restore.Identity{}) {
		t.Fatalf("a link was proven: %+v", proof)
	}
}

// TestRunRecordsToKafka: on the real broker, Ready creates the topic and
// Record's event is on it, once.
func TestRunRecordsToKafka(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.Topic(t, brokers, "restore-record")
	sc := newSeed(t)
	rec := &restore.KafkaRecorder{Brokers: brokers, Topic: topic, Timeout: 30 * time.Second, Partitions: 1}
	defer rec.Close()
	res, err := restore.Run(context.Background(), sc.h, sc.request(rec))
	if err != nil || res.Outcome != restore.Restored || !strings.Contains(res.RecordedTo, topic) {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	msgs := testenv.ReadAll(t, brokers, topic)
	if len(msgs) != 1 {
		t.Fatalf("%d messages on %s, want the one signal.restored", len(msgs), topic)
	}
	e, err := model.Decode(msgs[0].Value)
	if err != nil || e.ID != res.Event.ID || e.Type != model.SignalRestored || e.Object != flagName {
		t.Fatalf("recorded %s: %+v, %v", msgs[0].Value, e, err)
	}
}

// TestRunRefusesKafkaCut: with the broker cut off (a proxy in front of
// the real one, down), nothing is written.
func TestRunRefusesKafkaCut(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	p := testenv.NewProxy(t, brokers[0])
	p.SetDown(true)
	sc := newSeed(t)
	rec := &restore.KafkaRecorder{Brokers: []string{p.Addr()}, Topic: testenv.Name("restore-cut"), Timeout: 5 * time.Second}
	defer rec.Close()
	if _, err := restore.Run(context.Background(), sc.h, sc.request(rec)); err == nil || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("Run with Kafka cut: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(sc.recv, flagName)); err == nil {
		t.Fatal("a signal was written with Kafka cut off")
	}
}

// consumingHistory is the events file, to which the consumer's events are
// appended after the first reading: a consumer that consumes while verify
// waits.
type consumingHistory struct {
	fileHistory
	reads int
}

func (h *consumingHistory) Batch(ctx context.Context, k model.BatchKey, asOf time.Time) (replay.Diagnosis, []replay.Diagnosis, error) {
	d, all, err := h.fileHistory.Batch(ctx, k, asOf)
	h.reads++
	if h.reads == 1 {
		f, ferr := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND, 0)
		if ferr != nil {
			return d, all, ferr
		}
		defer f.Close()
		for i, typ := range []model.EventType{model.BatchIdentified, model.ConsumeSucceeded} {
			fmt.Fprintf(f, `{"spec":"handoff/v1","event_id":"c-%d","type":"%s","time":"2026-10-02T09:0%d:00Z","pipeline":"%s","business_date":"2026-09-30","batch_id":"20260930","system":"consumer","rows":300}`+"\n", i, typ, i, pipeline)
		}
	}
	return d, all, err
}

// TestVerifyWaitsForConsumer: verify reads again until the consumer has
// consumed, then passes; without waiting it fails on consumed_once.
func TestVerifyWaitsForConsumer(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Minute} {
		sc := newSeed(t)
		rec := &restore.FileRecorder{Path: sc.events}
		if res, err := restore.Run(context.Background(), sc.h, sc.request(rec)); err != nil || res.Outcome != restore.Restored {
			t.Fatalf("Run: %+v, %v", res, err)
		}
		rec.Close()
		h := &consumingHistory{fileHistory: sc.h}
		v, _, err := restore.Verify(context.Background(), h, restore.VerifyRequest{Key: key, Dir: sc.recv, Contract: sc.c, Wait: wait, Poll: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case wait == 0 && (h.reads != 1 || v.Passed() || !slices.Contains(v.Failed(), remedy.CheckConsumedOnce)):
			t.Fatalf("no wait: %d reads, failed %v; want one read failing consumed_once", h.reads, v.Failed())
		case wait > 0 && (h.reads != 2 || !v.Passed()):
			t.Fatalf("wait: %d reads, failed %v; want two reads and every check passed", h.reads, v.Failed())
		}
	}
}

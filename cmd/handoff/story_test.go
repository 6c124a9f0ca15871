package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/ingest/files"
	"github.com/handoff-dev/handoff/ingest/restore"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
)

// TestSeedStory is the whole seed case (docs/seed-case.md) in temporary
// directories, on the real Kafka and ClickHouse: a producer writes a temp
// file and renames it, and publishes its flag; a watcher at the source
// reports both; an exchange copies the data file to the receiver but not
// the flag, and a watcher there reports it; the ingester stores it all.
// diagnose says not_identified with signal_delivered missing;
// restore-signal's dry run proves every precondition; --apply writes the
// flag; a small consumer that starts on the flag consumes the batch once;
// verify passes; a second --apply changes nothing.
func TestSeedStory(t *testing.T) {
	svc := startServices(t, "handoff_story")
	ctx, brokers, chAddr, db, topic := svc.ctx, svc.brokers, svc.chAddr, svc.db, svc.topic
	root := t.TempDir()
	src, recv := filepath.Join(root, "producer-out"), filepath.Join(root, "receiver-inbox")
	for _, d := range []string{src, recv} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	contractFile := filepath.Join(root, "abs.yaml")
	if err := os.WriteFile(contractFile, []byte(storyContract), 0o644); err != nil {
		t.Fatal(err)
	}
	background := svc.background
	for _, w := range []struct{ role, dir string }{{"producer", src}, {"exchange", recv}} {
		// The receiver's watcher believes a restore mark once the
		// signal.restored it names is stored.
		background("watch "+w.role, "watch", "--role", w.role, "--dir", w.dir, "--contract", contractFile, "--settle", "300ms",
			"--rescan", "2s", "--kafka-brokers", strings.Join(brokers, ","), "--topic", topic, "--component", w.role+"-watch",
			"--restored-clickhouse", "--clickhouse-addr", chAddr, "--clickhouse-database", db)
	}
	em, err := emit.New(emit.Config{Brokers: brokers, Topic: topic, CreateTopic: true, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	send := func(events ...model.Event) {
		t.Helper()
		if err := em.Emit(ctx, events...); err != nil {
			t.Fatal(err)
		}
	}

	// History: the previous batch was delivered normally.
	data := csvData(1200)
	var prev []model.Event
	for _, e := range storyEvents(data, 1200) {
		if e.BatchID == "20260929" {
			prev = append(prev, e)
		}
	}
	send(prev...)

	// The producer: a temp file, renamed to the final name once written,
	// then the flag; its job says SUCCESS.
	tmp := filepath.Join(src, storyData+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	waitTimeline(t, chAddr, db, contractFile, "the staged temp file", model.ArtifactStaged)
	if err := os.Rename(tmp, filepath.Join(src, storyData)); err != nil {
		t.Fatal(err)
	}
	waitTimeline(t, chAddr, db, contractFile, "the final file", model.ArtifactFinalized)
	if err := os.WriteFile(filepath.Join(src, storyFlag), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	key, _ := model.ParseBatchKey(storyBatch)
	send(model.Event{Type: model.JobSucceeded, Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: key.BatchID,
		System: model.Producer, Component: "build-runner-3"})

	// The exchange copies the data file (temp name, then rename), and
	// loses the flag.
	if err := os.WriteFile(filepath.Join(recv, storyData+".part"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(recv, storyData+".part"), filepath.Join(recv, storyData)); err != nil {
		t.Fatal(err)
	}

	// The diagnosis: not_identified, the signal missing at the receiver.
	d := waitTimeline(t, chAddr, db, contractFile, "the transfer and the signal at the source", model.ArtifactTransferred, model.SignalPublished, model.JobSucceeded)
	if d.Verdict != "not_identified" || d.FirstMissing != "signal_delivered" || d.NextStep.Action != "restore_signal" {
		t.Fatalf("diagnosis: verdict %s, first missing %s, next step %s; want not_identified, signal_delivered, restore_signal", d.Verdict, d.FirstMissing, d.NextStep.Action)
	}
	for _, e := range d.Timeline {
		if e.Type == string(model.ArtifactFinalized) && (e.Rows != 1200 || e.Checksum != sha(data)) {
			t.Fatalf("the producer's watcher reported %+v, want 1200 rows and %s", e, sha(data))
		}
	}

	// restore-signal, dry run: every precondition proven, nothing written.
	restoreSignal := func(extra ...string) (int, restoreOut, string) {
		args := append([]string{"restore-signal", "--batch", storyBatch, "--dir", recv, "--contract", contractFile,
			"--clickhouse-addr", chAddr, "--clickhouse-database", db, "--format", "json", "--settle", "200ms"}, extra...)
		var out, errb bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &out, &errb)
		var o restoreOut
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatalf("restore-signal %v: exit %d, output %q: %v; %s", extra, code, out.String(), err, errb.String())
		}
		return code, o, errb.String()
	}
	code, o, errOut := restoreSignal()
	if code != exitOK || o.Outcome != restore.WouldRestore || len(o.Preconditions) != 8 || len(o.unproven()) != 0 {
		t.Fatalf("dry run: exit %d, %+v, %s", code, o, errOut)
	}
	if _, err := os.Stat(filepath.Join(recv, storyFlag)); err == nil {
		t.Fatal("the dry run wrote the flag")
	}

	// A small consumer that starts on the flag: it identifies the batch by
	// the derived names, loads the file once, and records it.
	consumed := make(chan error, 1)
	go func() { consumed <- consumeOnFlag(ctx, em, recv, key) }()

	code, o, errOut = restoreSignal("--apply", "--reason", "seed case: the exchange lost the flag", "--kafka-brokers", strings.Join(brokers, ","), "--topic", topic)
	if code != exitOK || o.Outcome != restore.Restored {
		t.Fatalf("apply: exit %d, %+v, %s", code, o, errOut)
	}
	flagInfo, err := os.Stat(filepath.Join(recv, storyFlag))
	if err != nil || flagInfo.Size() != 0 {
		t.Fatalf("flag after --apply: %v, %v", flagInfo, err)
	}
	select {
	case err := <-consumed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the consumer did not start on the restored flag within a minute")
	}

	// verify waits for the consumption to be stored, then checks it all.
	var out, errb bytes.Buffer
	code = run(ctx, []string{"verify", "--batch", storyBatch, "--dir", recv, "--contract", contractFile, "--clickhouse-addr", chAddr,
		"--clickhouse-database", db, "--format", "json", "--wait", "60s", "--poll", "300ms"}, strings.NewReader(""), &out, &errb)
	var v verifyOut
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("verify: exit %d, %q: %v; %s", code, out.String(), err, errb.String())
	}
	if code != exitOK || !v.Passed || len(v.Checks) != 7 {
		t.Fatalf("verify: exit %d, failed %v: %+v", code, v.failed(), v)
	}

	// A second --apply changes nothing and says so.
	code, o, errOut = restoreSignal("--apply", "--reason", "again", "--kafka-brokers", strings.Join(brokers, ","), "--topic", topic)
	if code != exitOK || o.Outcome != restore.InPlace || o.EventID != "" {
		t.Fatalf("second apply: exit %d, %+v, %s", code, o, errOut)
	}
	again, err := os.Stat(filepath.Join(recv, storyFlag))
	if err != nil || !again.ModTime().Equal(flagInfo.ModTime()) || !os.SameFile(again, flagInfo) {
		t.Fatalf("the second apply touched the flag: %v", err)
	}
	d = waitTimeline(t, chAddr, db, contractFile, "the consumption", model.ConsumeSucceeded)
	if d.Status != "delivered" {
		t.Fatalf("after the fix: status %s, verdict %s", d.Status, d.Verdict)
	}
	// The flag at the receiver is proven by the restore alone: the
	// watcher there knows the restored flag by its mark and does not
	// report it as transferred.
	signals := map[string]int{}
	for _, e := range d.Timeline {
		if strings.HasPrefix(e.Type, "signal.") {
			signals[e.Type]++
		}
	}
	if signals[string(model.SignalRestored)] != 1 || signals[string(model.SignalTransferred)] != 0 || signals[string(model.SignalPublished)] != 1 {
		t.Fatalf("signal events stored: %v, want one signal.published and one signal.restored", signals)
	}
}

// liveServices is a test's share of the real Kafka and ClickHouse: its
// own database and events topic, an ingester storing the one into the
// other, and commands run in the background until the test ends (each
// must then exit 0).
type liveServices struct {
	t                 *testing.T
	ctx               context.Context
	cancel            context.CancelFunc
	brokers           []string
	chAddr, db, topic string
}

func startServices(t *testing.T, prefix string) *liveServices {
	t.Helper()
	s := &liveServices{t: t, brokers: testenv.KafkaBrokers(t), chAddr: testenv.ClickHouseAddr(t)}
	clearEnv(t)
	t.Setenv("HANDOFF_KAFKA_BROKERS", "")
	s.db = testenv.Database(t, testenv.ClickHouse(t), prefix)
	s.topic = testenv.Topic(t, s.brokers, prefix)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	t.Cleanup(s.cancel)
	s.background("ingest", "ingest", "--kafka-brokers", strings.Join(s.brokers, ","), "--topic", s.topic, "--dlq-topic", s.topic+".dlq",
		"--group", s.topic, "--clickhouse-addr", s.chAddr, "--clickhouse-database", s.db, "--metrics-addr", "", "--flush-interval", "200ms")
	return s
}

// background runs a command until the test ends.
func (s *liveServices) background(name string, args ...string) {
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(s.ctx, args, strings.NewReader(""), &bytes.Buffer{}, &errb) }()
	s.t.Cleanup(func() {
		s.cancel()
		if code := <-done; code != exitOK {
			s.t.Errorf("%s exited %d: %s", name, code, errb.String())
		}
	})
}

// consumeOnFlag is the consumer: it waits for the batch's flag in dir,
// then reads the data file the contract names and records one
// identification and one consumption with the rows it loaded.
func consumeOnFlag(ctx context.Context, em *emit.Emitter, dir string, key model.BatchKey) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(dir, storyFlag)); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	f, err := files.Probe(ctx, filepath.Join(dir, storyData), files.Options{Format: files.CSV, Header: true})
	if err != nil || f.Err != "" {
		return fmt.Errorf("consumer: %v %s", err, f.Err)
	}
	base := model.Event{Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: key.BatchID, System: model.Consumer, Component: "consume.account-balance-snapshot.daily"}
	id, cs := base, base
	id.Type, id.Rows, id.HasRows = model.BatchIdentified, f.Rows, true
	cs.Type, cs.Rows, cs.HasRows = model.ConsumeSucceeded, f.Rows, true
	return em.Emit(ctx, id, cs)
}

// storyDiag is what the story reads of a diagnosis.
type storyDiag struct {
	Status       string `json:"status"`
	Verdict      string `json:"verdict"`
	FirstMissing string `json:"first_missing"`
	NextStep     struct {
		Action string `json:"action"`
	} `json:"next_step"`
	Timeline []struct {
		Type     string `json:"type"`
		Rows     int64  `json:"rows"`
		Checksum string `json:"checksum"`
	} `json:"timeline"`
}

// waitTimeline diagnoses the story's batch from ClickHouse until its
// timeline holds every type in types, and returns that diagnosis.
func waitTimeline(t *testing.T, addr, db, contractFile, what string, types ...model.EventType) storyDiag {
	t.Helper()
	var d storyDiag
	testenv.Eventually(t, time.Minute, what+" stored", func() (bool, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"diagnose", "--clickhouse-addr", addr, "--clickhouse-database", db, "--batch", storyBatch,
			"--contract", contractFile, "--format", "json"}, strings.NewReader(""), &out, &errb)
		if code > exitNotDelivered {
			return false, errb.String()
		}
		var ds []storyDiag
		if err := json.Unmarshal(out.Bytes(), &ds); err != nil || len(ds) != 1 {
			return false, fmt.Sprintf("exit %d, %q, %v", code, out.String(), err)
		}
		d = ds[0]
		var have []string
		for _, e := range d.Timeline {
			have = append(have, e.Type)
		}
		for _, ty := range types {
			if !slices.Contains(have, string(ty)) {
				return false, "timeline " + strings.Join(have, ", ")
			}
		}
		return true, ""
	})
	return d
}

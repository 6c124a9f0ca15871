package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/restore"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/manifest"
)

const (
	storyPipeline = "account-balance-snapshot.daily"
	storyBatch    = storyPipeline + "/2026-09-30/20260930"
	storyData     = "account_balance_snapshot_20260930.csv"
	storyFlag     = "account_balance_snapshot_20260930.flag"
)

// storyContract is the seed's contract with a header line in the data file.
const storyContract = `pipeline: account-balance-snapshot.daily
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

// csvData returns a header and n rows of account balances.
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

// restoreCase is one seed case on disk: a receiver directory holding the
// data file, an events file and a contract.
type restoreCase struct {
	dir, recv, events, contract string
	data                        []byte
	evs                         []model.Event
}

// storyEvents is the seed story as the watchers and the consumer record it:
// 2026-09-29 delivered, 2026-09-30 stopped after the transfer. rows, bytes
// and checksum describe data.
func storyEvents(data []byte, rows int64) []model.Event {
	mk := func(date string, n int, typ model.EventType, sys model.System, at string, obj string) model.Event {
		d := model.MustParseDate(date)
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("t-%s-%d", d.Compact(), n), Type: typ, Pipeline: storyPipeline, BusinessDate: d,
			BatchID: d.Compact(), System: sys, Component: string(sys) + "-1", Object: obj}
		e.Time, _ = time.Parse(time.RFC3339, at)
		return e
	}
	var out []model.Event
	for _, date := range []string{"2026-09-29", "2026-09-30"} {
		c := strings.ReplaceAll(date, "-", "")
		f := "account_balance_snapshot_" + c + ".csv"
		g := "account_balance_snapshot_" + c + ".flag"
		fin := mk(date, 2, model.ArtifactFinalized, model.Producer, date+"T17:14:02Z", f)
		fin.Rows, fin.HasRows, fin.Bytes, fin.HasBytes, fin.Checksum = rows, true, int64(len(data)), true, sha(data)
		tr := mk(date, 4, model.ArtifactTransferred, model.Exchange, date+"T17:20:05Z", f)
		tr.Bytes, tr.HasBytes, tr.Checksum = int64(len(data)), true, sha(data)
		out = append(out, mk(date, 1, model.JobSucceeded, model.Producer, date+"T17:14:05Z", ""), fin,
			mk(date, 3, model.SignalPublished, model.Producer, date+"T17:14:06Z", g), tr)
		if date == "2026-09-29" {
			cs := mk(date, 7, model.ConsumeSucceeded, model.Consumer, date+"T17:30:00Z", "")
			cs.Rows, cs.HasRows = rows, true
			out = append(out, mk(date, 5, model.SignalTransferred, model.Exchange, date+"T17:20:06Z", g),
				mk(date, 6, model.BatchIdentified, model.Consumer, date+"T17:25:00Z", ""), cs)
		}
	}
	return out
}

func newRestoreCase(t *testing.T) *restoreCase {
	t.Helper()
	clearEnv(t)
	t.Setenv("HANDOFF_KAFKA_BROKERS", "")
	dir := t.TempDir()
	rc := &restoreCase{dir: dir, recv: filepath.Join(dir, "inbox"), events: filepath.Join(dir, "events.jsonl"), contract: filepath.Join(dir, "abs.yaml")}
	if err := os.Mkdir(rc.recv, 0o755); err != nil {
		t.Fatal(err)
	}
	rc.data = csvData(500)
	rc.evs = storyEvents(rc.data, 500)
	if err := os.WriteFile(rc.contract, []byte(storyContract), 0o644); err != nil {
		t.Fatal(err)
	}
	rc.writeData(t, storyData, rc.data)
	return rc
}

func (rc *restoreCase) writeData(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(rc.recv, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (rc *restoreCase) writeEvents(t *testing.T) {
	t.Helper()
	var buf []byte
	for i := range rc.evs {
		buf = append(rc.evs[i].AppendJSON(buf), '\n')
	}
	if err := os.WriteFile(rc.events, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

type restoreOut struct {
	Outcome       string `json:"outcome"`
	Signal        string `json:"signal"`
	EventID       string `json:"event_id"`
	Preconditions []struct {
		Name   string `json:"name"`
		Proven bool   `json:"proven"`
		Detail string `json:"detail"`
	} `json:"preconditions"`
}

func (o restoreOut) unproven() []string {
	var out []string
	for _, p := range o.Preconditions {
		if !p.Proven {
			out = append(out, p.Name)
		}
	}
	return out
}

// restore runs restore-signal on the case with extra flags.
func (rc *restoreCase) restore(t *testing.T, extra ...string) (int, restoreOut, string) {
	t.Helper()
	args := append([]string{"restore-signal", "--batch", storyBatch, "--dir", rc.recv, "--contract", rc.contract,
		"--events", rc.events, "--as-of", "2026-10-03T00:00:00Z", "--format", "json", "--settle", "50ms"}, extra...)
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	var o restoreOut
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatalf("restore-signal output %q: %v", out.String(), err)
		}
	}
	return code, o, errb.String()
}

// snapshot lists the receiver directory and the events file, to prove
// nothing was written.
func (rc *restoreCase) snapshot(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir(rc.recv)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		info, _ := e.Info()
		content, _ := os.ReadFile(filepath.Join(rc.recv, e.Name()))
		fmt.Fprintf(&b, "%s %d %s %s\n", e.Name(), info.Size(), info.ModTime().Format(time.RFC3339Nano), sha(content))
	}
	ev, _ := os.ReadFile(rc.events)
	fmt.Fprintf(&b, "events %s\n", sha(ev))
	return b.String()
}

func TestRestoreSignalDryRunApplyAndAgain(t *testing.T) {
	rc := newRestoreCase(t)
	rc.writeEvents(t)
	before := rc.snapshot(t)

	code, o, errOut := rc.restore(t)
	if code != exitOK || o.Outcome != restore.WouldRestore || len(o.unproven()) != 0 || len(o.Preconditions) != 8 {
		t.Fatalf("dry run: exit %d, %+v, %s", code, o, errOut)
	}
	if rc.snapshot(t) != before {
		t.Fatal("the dry run wrote something")
	}

	code, _, errOut = rc.restore(t, "--apply")
	if code != exitUsage || !strings.Contains(errOut, "--reason") {
		t.Fatalf("--apply without --reason: exit %d, %s", code, errOut)
	}

	code, o, errOut = rc.restore(t, "--apply", "--reason", "seed case: flag lost by the exchange")
	if code != exitOK || o.Outcome != restore.Restored || o.EventID == "" {
		t.Fatalf("apply: exit %d, %+v, %s", code, o, errOut)
	}
	flag, err := os.ReadFile(filepath.Join(rc.recv, storyFlag))
	if err != nil || len(flag) != 0 {
		t.Fatalf("flag after apply: %q, %v", flag, err)
	}
	evs, _ := os.ReadFile(rc.events)
	last := evs[bytes.LastIndexByte(evs[:len(evs)-1], '\n')+1:]
	e, err := model.Decode(bytes.TrimSpace(last))
	if err != nil || e.Type != model.SignalRestored || e.ID != o.EventID || e.Attrs["reason"] != "seed case: flag lost by the exchange" || e.System != model.Operator {
		t.Fatalf("recorded event %s: %+v %v", last, e, err)
	}
	ents, _ := os.ReadDir(rc.recv)
	if len(ents) != 2 {
		t.Fatalf("receiver holds %d files after apply, want data + flag (no temporary file left)", len(ents))
	}

	after := rc.snapshot(t)
	code, o, errOut = rc.restore(t, "--apply", "--reason", "again")
	if code != exitOK || o.Outcome != restore.InPlace {
		t.Fatalf("second apply: exit %d, %+v, %s", code, o, errOut)
	}
	if rc.snapshot(t) != after {
		t.Fatal("the second apply changed something")
	}
}

// refuse runs a dry run and an --apply on the case and checks both
// refuse, name want among the unproven preconditions, and write nothing.
func refuse(t *testing.T, rc *restoreCase, want string) {
	t.Helper()
	before := rc.snapshot(t)
	for _, apply := range [][]string{nil, {"--apply", "--reason", "test"}} {
		code, o, errOut := rc.restore(t, apply...)
		if code != exitNotDelivered || o.Outcome != restore.Refused || !slices.Contains(o.unproven(), want) {
			t.Fatalf("restore-signal %v: exit %d, outcome %s, unproven %v, want exit 1, refused, %s among them\n%s", apply, code, o.Outcome, o.unproven(), want, errOut)
		}
		if rc.snapshot(t) != before {
			t.Fatalf("restore-signal %v refused but wrote something", apply)
		}
	}
}

func TestRestoreSignalRefusesRowsDiffer(t *testing.T) {
	rc := newRestoreCase(t)
	// The receiver's file has one row more than was finalized; its size
	// and checksum are what the events say, so only the rows disagree.
	data := csvData(501)
	rc.writeData(t, storyData, data)
	rc.evs = storyEvents(data, 500)
	rc.writeEvents(t)
	refuse(t, rc, "rows_valid")
}

func TestRestoreSignalRefusesChecksumDiffers(t *testing.T) {
	rc := newRestoreCase(t)
	rc.writeEvents(t)
	changed := bytes.Clone(rc.data)
	changed[len(changed)-2] ^= 1 // same size, same rows, other bytes
	rc.writeData(t, storyData, changed)
	refuse(t, rc, "checksum_unchanged")
}

func TestRestoreSignalRefusesNameOfAnotherBatch(t *testing.T) {
	rc := newRestoreCase(t)
	for i := range rc.evs {
		if rc.evs[i].Type == model.ArtifactTransferred && rc.evs[i].BatchID == "20260930" {
			rc.evs[i].Object = "account_balance_snapshot_20260929.csv"
		}
	}
	rc.writeEvents(t)
	refuse(t, rc, "identity_matches")
}

func TestRestoreSignalRefusesTempFile(t *testing.T) {
	rc := newRestoreCase(t)
	rc.writeEvents(t)
	if err := os.Rename(filepath.Join(rc.recv, storyData), filepath.Join(rc.recv, storyData+".part")); err != nil {
		t.Fatal(err)
	}
	refuse(t, rc, "artifact_at_receiver")
}

func TestRestoreSignalRefusesGrowingFile(t *testing.T) {
	rc := newRestoreCase(t)
	rc.writeEvents(t)
	// A copier still appending to the final name, in place.
	f, err := os.OpenFile(filepath.Join(rc.recv, storyData), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				fmt.Fprintf(f, "%08d,2026-09-30,1.00\n", 100000+i)
			}
		}
	}()
	code, o, errOut := rc.restore(t, "--apply", "--reason", "test", "--settle", "1s")
	close(stop)
	<-done
	if code != exitNotDelivered || o.Outcome != restore.Refused || !slices.Contains(o.unproven(), "artifact_at_receiver") {
		t.Fatalf("exit %d, %+v, %s", code, o, errOut)
	}
	if _, err := os.Stat(filepath.Join(rc.recv, storyFlag)); err == nil {
		t.Fatal("a flag was written for a growing file")
	}
}

func TestRestoreSignalRefusesSignalPresent(t *testing.T) {
	rc := newRestoreCase(t)
	rc.writeEvents(t)
	rc.writeData(t, storyFlag, []byte("rows=12\n"))
	refuse(t, rc, "no_signal_present")
}

func TestRestoreSignalRefusesPreviousNotDelivered(t *testing.T) {
	rc := newRestoreCase(t)
	rc.evs = slices.DeleteFunc(rc.evs, func(e model.Event) bool {
		return e.BatchID == "20260929" && e.Type == model.ConsumeSucceeded
	})
	rc.writeEvents(t)
	refuse(t, rc, "previous_delivered")
}

func TestRestoreSignalUsage(t *testing.T) {
	rc := newRestoreCase(t)
	rc.writeEvents(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"restore-signal", "--dir", rc.recv, "--contract", rc.contract, "--events", rc.events}, "--batch"},
		{[]string{"restore-signal", "--batch", "x", "--dir", rc.recv, "--contract", rc.contract, "--events", rc.events}, "--batch"},
		{[]string{"restore-signal", "--batch", storyBatch, "--contract", rc.contract, "--events", rc.events}, "--dir"},
		{[]string{"restore-signal", "--batch", storyBatch, "--dir", rc.recv, "--events", rc.events}, "--contract"},
		{[]string{"restore-signal", "--batch", storyBatch, "--dir", filepath.Join(rc.dir, "none"), "--contract", rc.contract, "--events", rc.events}, "not a directory"},
		{[]string{"restore-signal", "--batch", storyBatch, "--dir", rc.recv, "--contract", rc.contract, "--clickhouse", "127.0.0.1:1", "--apply", "--reason", "r"}, "--kafka-brokers"},
		{[]string{"verify", "--batch", storyBatch, "--dir", rc.recv, "--contract", rc.contract, "--events", rc.events, "--wait", "-1s"}, "--wait"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %s", tt.args, code, errb.String(), tt.want)
		}
	}
	// A batch with no events at all is a "no", not a failure.
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"restore-signal", "--batch", storyPipeline + "/2026-10-05/20261005", "--dir", rc.recv, "--contract", rc.contract, "--events", rc.events}, strings.NewReader(""), &out, &errb)
	if code != exitNotDelivered || !strings.Contains(errb.String(), "no events recorded") {
		t.Errorf("unknown batch: exit %d, %s", code, errb.String())
	}
}

type verifyOut struct {
	Passed bool `json:"passed"`
	Checks []struct {
		Name   string `json:"name"`
		Proven bool   `json:"proven"`
		Detail string `json:"detail"`
	} `json:"checks"`
}

func (o verifyOut) failed() []string {
	var out []string
	for _, c := range o.Checks {
		if !c.Proven {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestVerifyFromFile: after the restore, verify fails until the consumer
// consumed, then passes.
func TestVerifyFromFile(t *testing.T) {
	rc := newRestoreCase(t)
	rc.writeEvents(t)
	if code, o, errOut := rc.restore(t, "--apply", "--reason", "r"); code != exitOK {
		t.Fatalf("apply: %d %+v %s", code, o, errOut)
	}
	verify := func() (int, verifyOut) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"verify", "--batch", storyBatch, "--dir", rc.recv, "--contract", rc.contract,
			"--events", rc.events, "--format", "json"}, strings.NewReader(""), &out, &errb)
		var o verifyOut
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatalf("verify output %q (%s): %v", out.String(), errb.String(), err)
		}
		return code, o
	}
	code, o := verify()
	if code != exitNotDelivered || o.Passed || !slices.Contains(o.failed(), "consumed_once") {
		t.Fatalf("verify before consumption: exit %d, %+v", code, o)
	}
	// The consumer identifies and consumes the batch once.
	f, err := os.OpenFile(rc.events, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{
		`{"spec":"handoff/v1","event_id":"c-1","type":"batch.identified","time":"2026-10-02T09:01:00Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"consumer"}`,
		`{"spec":"handoff/v1","event_id":"c-2","type":"consume.succeeded","time":"2026-10-02T09:02:00Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"consumer","rows":500}`,
	} {
		fmt.Fprintln(f, e)
	}
	f.Close()
	code, o = verify()
	if code != exitOK || !o.Passed || len(o.Checks) != 7 {
		t.Fatalf("verify after consumption: exit %d, %+v", code, o)
	}
}

// TestRestoreSignalManifest: a contract whose signal carries a manifest
// gets one describing the verified file; the second apply finds it in
// place.
func TestRestoreSignalManifest(t *testing.T) {
	rc := newRestoreCase(t)
	if err := os.WriteFile(rc.contract, []byte(storyContract+"signal_content: manifest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rc.writeEvents(t)
	code, o, errOut := rc.restore(t, "--apply", "--reason", "r")
	if code != exitOK || o.Outcome != restore.Restored {
		t.Fatalf("apply: exit %d, %+v, %s", code, o, errOut)
	}
	b, err := os.ReadFile(filepath.Join(rc.recv, storyFlag))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(b)
	if err != nil {
		t.Fatalf("signal %q: %v", b, err)
	}
	f, ok := m.File(storyData)
	if m.Key.String() != storyBatch || m.Rows != 500 || !ok || f.Checksum != sha(rc.data) || f.Bytes != int64(len(rc.data)) {
		t.Fatalf("manifest %+v", m)
	}
	if code, o, _ := rc.restore(t, "--apply", "--reason", "again"); code != exitOK || o.Outcome != restore.InPlace {
		t.Fatalf("second apply: exit %d, %+v", code, o)
	}
}

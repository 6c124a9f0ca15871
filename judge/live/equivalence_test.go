package live_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/fold"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/backfill"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/schema"
)

// genHistory writes a generated history (internal/gen) and its contracts
// into a temporary directory and returns the file, the contracts and what
// was generated.
func genHistory(t *testing.T, o gen.Options) (string, *contract.Set, gen.Result) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gen.Write(f, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gen.WriteContracts(filepath.Join(dir, "contracts"), o, res.Pipelines); err != nil {
		t.Fatal(err)
	}
	set, err := contract.LoadFS(os.DirFS(dir), "contracts")
	if err != nil {
		t.Fatal(err)
	}
	return path, set, res
}

// publishFile publishes every line of path to the events topic in a
// shuffled order (seeded), keyed by batch as producers key them; a line
// that is not a valid event goes unkeyed (ingest dead-letters it).
func (e *env) publishFile(t *testing.T, path string, seed uint64) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dec model.Decoder
	var msgs []kafka.Message
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if len(l) == 0 {
			continue
		}
		m := kafka.Message{Value: l}
		if ev, err := dec.Decode(l); err == nil {
			m.Key = []byte(ev.PartitionKey())
		}
		msgs = append(msgs, m)
	}
	rand.New(rand.NewPCG(seed, 3)).Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Topic: e.cfg.Topic, Balancer: &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, BatchSize: 5000, BatchBytes: 4 << 20}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	return len(msgs)
}

// diagnoseFile is `handoff diagnose --events path --as-of asOf --format
// json`: the file read as the command reads it (ingest/jsonl), folded as
// it folds (analyzer/fold), one JSON diagnosis per batch key.
func diagnoseFile(t *testing.T, path string, contracts *contract.Set, asOf time.Time) map[model.BatchKey][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := map[model.BatchKey][]byte{}
	render := func(ds []replay.Diagnosis) [][]byte {
		r := make([][]byte, len(ds))
		for i := range ds {
			r[i] = ds[i].AppendJSON(nil)
		}
		return r
	}
	f := fold.New(ctx, batches.Contracts(contracts), asOf, fold.Options{}, render, func(js [][]byte) error {
		for _, j := range js {
			k, err := model.ParseBatchKey(batchOf(j))
			if err != nil {
				return fmt.Errorf("diagnosis %s: %w", j, err)
			}
			out[k] = j
		}
		return nil
	})
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = jsonl.Read(ctx, r, jsonl.Options{}, func(_ int, e *model.Event, err error) error {
		if err != nil {
			return nil // rejected lines: diagnose counts them and goes on
		}
		return f.Add(e)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	return out
}

// batchOf returns the "batch" field of a diagnosis JSON (its first field).
func batchOf(j []byte) string {
	const pre = `{"batch":"`
	if !bytes.HasPrefix(j, []byte(pre)) {
		return ""
	}
	rest := j[len(pre):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// TestDetectEqualsDiagnoseAtScale is the detector's equivalence test on the real
// services: a generated history of more than 10,000 batches over hourly,
// daily and weekday pipelines, with every kind of break and anomaly,
// redeliveries, bad lines and expected batches that never send an event,
// is published to Kafka in a shuffled order; handoff ingest stores it and
// handoff detect (fixed clock) folds it. Once the detector has caught up,
// its diagnosis of every batch equals, byte for byte, what `handoff
// diagnose` gives on the same file as of the same time (a batch it closed
// is delivered there), `handoff backfill` over what ingest stored gives
// the same answer byte for byte, and the batches that never sent an event,
// and only they, have a stored `missing` finding.
func TestDetectEqualsDiagnoseAtScale(t *testing.T) {
	testenv.Integration(t)
	end := time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC)
	o := gen.Options{
		Seed: 7, End: end, Days: 150, Pipelines: 9, Bad: 0.001,
		Schedules:     []gen.Schedule{gen.Hourly, gen.Daily, gen.Weekdays},
		NeverProduced: 0.01, AllKinds: true,
	}
	path, contracts, res := genHistory(t, o)
	if res.Batches < 10_000 {
		t.Fatalf("generated %d batches, want at least 10,000", res.Batches)
	}
	now := end.AddDate(0, 0, 2) // the generator's batches of the last two days are still on their way

	e := newEnvParts(t, 4)
	e.contracts = contracts
	e.cfg.ExpectFrom = res.First.Format(time.DateOnly)
	e.cfg.RetainDays = o.Days + 10 // the whole history stays in the detector's window
	e.cfg.Heartbeat = 0
	started := time.Now()
	n := e.publishFile(t, path, 1)
	t.Logf("published %d lines (%d batches, %d never produced) in %v", n, res.Batches, len(res.NeverProduced), time.Since(started).Round(time.Millisecond))

	d := e.startDetector(t, now)
	d.caughtUp(t, now)
	_, _, published := d.r.Progress()
	t.Logf("detector caught up after %v, %d findings published", time.Since(started).Round(time.Millisecond), published)
	// Every published finding stored (ingest's results consumer), then stop.
	var stored map[string][]string // kind -> batches with a finding of that kind
	testenv.Eventually(t, 2*time.Minute, "the published findings stored", func() (bool, string) {
		var rows int
		stored, rows = e.findingKinds(t)
		return int64(rows) == published, fmt.Sprintf("%d stored, %d published", rows, published)
	})
	d.stop()
	det := d.r.Detector()

	want := diagnoseFile(t, path, contracts, now)
	open, closed := 0, 0
	for k, w := range want {
		got, ok := det.Diagnosis(k)
		if !ok {
			closed++
			if !strings.Contains(string(w), `"status":"delivered"`) {
				t.Errorf("%s: the detector closed it, diagnose says %s", k, w)
			}
			continue
		}
		open++
		if g := got.AppendJSON(nil); !bytes.Equal(g, w) {
			t.Errorf("%s: detector and diagnose disagree:\n%s", k, firstDiff(g, w))
		}
	}
	t.Logf("%d batches diagnosed: %d open in the detector and equal, %d closed and delivered; %v in all", len(want), open, closed, time.Since(started).Round(time.Millisecond))
	if open == 0 || closed == 0 {
		t.Fatalf("open %d, closed %d: the comparison must cover both", open, closed)
	}

	// handoff backfill over what ingest stored gives the same answers.
	testenv.Eventually(t, 2*time.Minute, "ingest has stored every event", func() (bool, string) {
		n := testenv.Uncommitted(t, e.brokers, e.cfg.IngestGroup, e.cfg.Topic)
		return n == 0, fmt.Sprintf("%d events not committed by ingest", n)
	})
	bf := backfillAll(t, e, contracts, res.First, end, now)
	if len(bf) != len(want) {
		t.Errorf("backfill diagnosed %d batches, diagnose %d", len(bf), len(want))
	}
	for k, w := range want {
		if b, ok := bf[k]; !ok {
			t.Errorf("%s: not in backfill's answer", k)
		} else if !bytes.Equal(b, w) {
			t.Errorf("%s: backfill and diagnose disagree:\n%s", k, firstDiff(b, w))
		}
	}
	t.Logf("backfill from ClickHouse: %d batches, each byte-equal to diagnose's", len(bf))

	// The batches that never sent an event: a missing not_produced finding
	// each, and no other batch has one. The hourly calendar runs past the
	// generated dates: the 24 hours of the day after End are due (start +
	// 30m) by now and never came either.
	wantMissing := slices.Clone(res.NeverProduced)
	for p := range res.Pipelines {
		if o.Schedule(p) != gen.Hourly {
			continue
		}
		for hh := range 24 {
			wantMissing = append(wantMissing, fmt.Sprintf("%s/%s/%s%02d", gen.PipelineName(p, gen.Hourly), end.AddDate(0, 0, 1).Format(time.DateOnly), end.AddDate(0, 0, 1).Format("20060102"), hh))
		}
	}
	sort.Strings(wantMissing)
	if got := stored["missing"]; !slices.Equal(got, wantMissing) {
		t.Errorf("missing findings for %d batches, want %d:\n got %v\nwant %v", len(got), len(wantMissing), got, wantMissing)
	}
	for _, k := range res.NeverProduced {
		bk, _ := model.ParseBatchKey(k)
		if _, ok := want[bk]; ok {
			t.Errorf("%s: never produced, yet diagnose has events of it", k)
		}
		dg, ok := det.Diagnosis(bk)
		if !ok || dg.Events != 0 || dg.Verdict != model.NotProduced {
			t.Errorf("%s: the detector's diagnosis %v (open %v), want an open batch with no events, not_produced", k, dg.Status, ok)
		}
	}
	// The history exercised every kind of finding.
	for _, k := range []string{"missing", "overdue", "failed", "identity_mismatch", "row_mismatch", "checksum_mismatch",
		"signal_before_final", "duplicate_consumption", "orphan_consumption", "success_without_artifact"} {
		if len(stored[k]) == 0 {
			t.Errorf("no %s finding: the generated history does not exercise it (kinds: %v)", k, kindsOf(stored))
		}
	}
}

// backfillAll runs `handoff backfill --from first --to last --as-of asOf`
// (judge/backfill over store/history) on the test's database and returns
// each batch's diagnosis JSON.
func backfillAll(t *testing.T, e *env, contracts *contract.Set, first, last, asOf time.Time) map[model.BatchKey][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := history.New(e.conn, e.db)
	if err != nil {
		t.Fatal(err)
	}
	day := func(t time.Time) model.Date { return model.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()} }
	out := map[model.BatchKey][]byte{}
	_, err = backfill.Run(ctx, st, backfill.Config{From: day(first), To: day(last), AsOf: asOf, Contracts: contracts},
		backfill.Hooks{Chunk: func(c *backfill.Chunk) error {
			for i := range c.Len() {
				k, err := model.ParseBatchKey(c.Keys[i])
				if err != nil {
					return err
				}
				if _, dup := out[k]; dup {
					return fmt.Errorf("backfill gave %s twice", k)
				}
				out[k] = bytes.Clone(c.Diagnosis(i))
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// findingKinds reads the stored findings: for each kind, the batches with
// a finding of that kind (sorted, once each), and how many distinct
// records are stored.
func (e *env) findingKinds(t *testing.T) (map[string][]string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := e.conn.Query(ctx, "SELECT kind, batch, count() FROM (SELECT DISTINCT fingerprint, seq, kind, batch FROM "+
		e.db+"."+schema.Findings+") GROUP BY kind, batch ORDER BY kind, batch")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	total := 0
	for rows.Next() {
		var kind, batch string
		var n uint64
		if err := rows.Scan(&kind, &batch, &n); err != nil {
			t.Fatal(err)
		}
		out[kind] = append(out[kind], batch)
		total += int(n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, total
}

func kindsOf(m map[string][]string) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}

// firstDiff shows where two outputs part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return fmt.Sprintf("at byte %d:\n  detect:   %s\n  diagnose: %s", i, a[lo:min(len(a), i+200)], b[lo:min(len(b), i+200)])
}

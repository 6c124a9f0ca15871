package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/fold"
	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/backfill"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/serve"
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
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Topic: e.cfg.Kafka.Topic, Balancer: &kafka.Murmur2Balancer{},
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
	base := newBaselines(t, asOf)
	render := func(ds []replay.Diagnosis) [][]byte {
		r := make([][]byte, len(ds))
		for i := range ds {
			base.annotate(&ds[i])
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
		base.l.Add(e)
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

// baselines is what diagnose and backfill add to each diagnosis: the
// baselines in force at the as-of, learned from the events read with the
// options every command uses (history.BaselineOptions).
type baselines struct {
	l    *learn.Learner
	o    learn.Options
	asOf time.Time
	once sync.Once
	exp  *learn.Expectations
}

func newBaselines(t *testing.T, asOf time.Time) *baselines {
	o, err := history.BaselineOptions()
	if err != nil {
		t.Fatal(err)
	}
	return &baselines{l: learn.New(), o: o, asOf: asOf}
}

// annotate is called once every event is in (at the fold's Finish).
func (b *baselines) annotate(d *replay.Diagnosis) {
	b.once.Do(func() { b.exp = b.l.Expect(learn.BaselineAsOf(b.asOf), 0, b.o) })
	if k, err := model.ParseBatchKey(d.Batch); err == nil {
		b.exp.Of(k.Pipeline).Annotate(d, k)
	}
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

// TestDetectEqualsDiagnoseAtScale is the cross-surface equivalence test on
// the real services: a generated history of more than 10,000 batches over
// hourly, daily and weekday pipelines, with every kind of break and
// anomaly, redeliveries, re-runs under another batch id, heartbeats
// stamped after the evaluation time, bad lines and expected batches that
// never send an event, is published to Kafka in a shuffled order; handoff
// ingest stores it and handoff detect (fixed clock) folds it. Once the
// detector has caught up, its diagnosis of every batch equals, byte for
// byte, what `handoff diagnose` gives on the same file as of the same time
// (a batch it closed is delivered there); `handoff backfill` and `diagnose
// --clickhouse` over what ingest stored give the same answers byte for
// byte; serve's batch API agrees on status, verdict, first missing
// boundary, anomalies, evidence and alive processes; every expected batch
// that never sent an event is in each of them (events 0), and they, and
// only they, have a stored `missing` finding.
func TestDetectEqualsDiagnoseAtScale(t *testing.T) {
	testenv.Integration(t)
	end := time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC)
	o := gen.Options{
		Seed: 7, End: end, Days: 150, Pipelines: 9, Bad: 0.001,
		Schedules:     []gen.Schedule{gen.Hourly, gen.Daily, gen.Weekdays},
		NeverProduced: 0.01, AllKinds: true, Reruns: 0.02,
		// Every consumer beats once more after the evaluation time: no
		// surface may count it, nor let it hide the beat before.
		HeartbeatsAfter: end.AddDate(0, 0, 2),
	}
	path, contracts, res := genHistory(t, o)
	if res.Batches < 10_000 || len(res.Reruns) == 0 || len(res.NeverProduced) == 0 {
		t.Fatalf("generated %d batches (%d re-run, %d never produced), want at least 10,000 with both", res.Batches, len(res.Reruns), len(res.NeverProduced))
	}
	now := end.AddDate(0, 0, 2) // the generator's batches of the last two days are still on their way

	e := newEnvParts(t, 4)
	e.contracts = contracts
	e.cfg.ExpectFrom = res.First.Format(time.DateOnly)
	e.cfg.RetainDays = o.Days + 10 // the whole history stays in the detector's window
	e.cfg.Heartbeat = 0
	e.cfg.Baselines = true // early warnings and baselines: every surface shows the same
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
	withBaseline := 0
	for _, w := range want {
		if bytes.Contains(w, []byte(`"baseline":"p95 over 28 days"`)) {
			withBaseline++
		}
	}
	if withBaseline == 0 {
		t.Fatalf("no diagnosis shows a baseline: the agreement on baselines below would say nothing")
	}
	t.Logf("%d of %d diagnoses show a baseline", withBaseline, len(want))
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
		n := testenv.Uncommitted(t, e.brokers, e.cfg.IngestGroup, e.cfg.Kafka.Topic)
		return n == 0, fmt.Sprintf("%d events not committed by ingest", n)
	})
	// Through the as-of date: the absent hourly batches of the day after
	// End are in range too.
	bf := backfillAll(t, e, contracts, res.First, now, now)
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

	// diagnose --clickhouse (its reader: history.ReadContext, then the
	// fold over the context's read) and serve's batch API agree too: on
	// every absent batch and a sample of the others, status, verdict,
	// first missing boundary, anomaly kinds, evidence and alive processes.
	dc := diagnoseClickHouse(t, e, contracts, res.Pipelines, o, day(res.First), day(now), now)
	if len(dc) != len(want) {
		t.Errorf("diagnose --clickhouse diagnosed %d batches, diagnose %d", len(dc), len(want))
	}
	for k, w := range want {
		if b, ok := dc[k]; !ok || !bytes.Equal(b, w) {
			t.Errorf("%s: diagnose --clickhouse and diagnose disagree (listed %v):\n%s", k, ok, firstDiff(b, w))
		}
	}
	srv := httptest.NewServer(newServe(t, e, contracts, now))
	defer srv.Close()
	checked := 0
	i := 0
	for k, w := range want {
		i++
		if !bytes.Contains(w, []byte(`"events":0,`)) && i%40 != 0 {
			continue
		}
		checked++
		if g, wf := servedFacts(t, srv.URL, k), factsOf(t, w); g != wf {
			t.Errorf("%s: serve's batch API and diagnose disagree:\n serve    %s\n diagnose %s", k, g, wf)
		}
	}
	t.Logf("diagnose --clickhouse: %d batches byte-equal; serve's batch API: %d batches agree", len(dc), checked)

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
		if w, ok := want[bk]; !ok || !bytes.Contains(w, []byte(`"events":0,`)) {
			t.Errorf("%s: never produced, and diagnose does not list it as an absent expected batch (events 0): %s", k, w)
		}
		dg, ok := det.Diagnosis(bk)
		if !ok || dg.Events != 0 || dg.Verdict != model.NotProduced {
			t.Errorf("%s: the detector's diagnosis %v (open %v), want an open batch with no events, not_produced", k, dg.Status, ok)
		}
	}
	// The detector's missing findings say what the other surfaces say of
	// the absent batch: status, verdict, first missing boundary.
	for batch, f := range e.missingFindings(t) {
		bk, _ := model.ParseBatchKey(batch)
		w, ok := want[bk]
		if !ok {
			t.Errorf("%s: a missing finding, and diagnose does not list the batch", batch)
			continue
		}
		d := factsOf(t, w)
		if f != [3]string{d.status, d.verdict, d.firstMissing} {
			t.Errorf("%s: the missing finding says %v, diagnose %v", batch, f, [3]string{d.status, d.verdict, d.firstMissing})
		}
	}
	// A scheduled batch that sent nothing and was re-run under another id
	// is not absent: the re-run stands in for it, on every surface.
	for _, k := range res.Reruns {
		bk, _ := model.ParseBatchKey(k)
		if w, ok := want[bk]; ok && bytes.Contains(w, []byte(`"events":0,`)) {
			t.Errorf("%s: re-run under another batch id, yet diagnose lists it as absent", k)
		}
		rk := bk
		rk.BatchID += "-r2" // internal/gen re-runs a date under the declared "{batch_id}-r2"
		if _, ok := want[rk]; !ok {
			t.Errorf("%s: its re-run %s is not diagnosed", k, rk)
		}
	}
	if slices.Contains(stored["missing"], res.Reruns[0]) {
		t.Errorf("%s: a missing finding for a re-run batch", res.Reruns[0])
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
	out := map[model.BatchKey][]byte{}
	lo, err := history.BaselineOptions()
	if err != nil {
		t.Fatal(err)
	}
	_, err = backfill.Run(ctx, st, backfill.Config{From: day(first), To: day(last), AsOf: asOf, Contracts: contracts, Baselines: &lo},
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

func day(t time.Time) model.Date { return model.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()} }

// diagnoseClickHouse is `handoff diagnose --clickhouse --pipeline P --from
// --to --as-of --format json` for every generated pipeline: the context
// of the range (history.ReadContext), the heartbeats, then the events
// from the context's first date, folded as the command folds them.
func diagnoseClickHouse(t *testing.T, e *env, contracts *contract.Set, pipelines int, o gen.Options, from, to model.Date, asOf time.Time) map[model.BatchKey][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := history.New(e.conn, e.db)
	if err != nil {
		t.Fatal(err)
	}
	out := map[model.BatchKey][]byte{}
	for p := range pipelines {
		name := gen.PipelineName(p, o.Schedule(p))
		cx, err := history.ReadContext(ctx, st, history.ContextRequest{Pipelines: []string{name}, From: from, To: to, AsOf: asOf, Contracts: contracts})
		if err != nil {
			t.Fatal(err)
		}
		first, _ := cx.First(name)
		base := newBaselines(t, asOf)
		f := fold.New(ctx, batches.Contracts(contracts), asOf, fold.Options{Grouped: true, From: from, To: to,
			First: func(string) (model.Date, bool) { return first, true }}, func(ds []replay.Diagnosis) [][]byte {
			r := make([][]byte, len(ds))
			for i := range ds {
				base.annotate(&ds[i])
				r[i] = ds[i].AppendJSON(nil)
			}
			return r
		}, func(js [][]byte) error {
			for _, j := range js {
				k, err := model.ParseBatchKey(batchOf(j))
				if err != nil {
					return err
				}
				out[k] = j
			}
			return nil
		})
		for i := range cx.Heartbeats {
			if err := f.Add(&cx.Heartbeats[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.EachEvent(ctx, cx.Filter(name), func(ev model.Event) error { base.l.Add(&ev); return f.Add(&ev) }); err != nil {
			t.Fatal(err)
		}
		if err := f.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// newServe is `handoff serve` over the test's database with a fixed clock.
func newServe(t *testing.T, e *env, contracts *contract.Set, now time.Time) *serve.Server {
	t.Helper()
	srv, err := serve.New(context.Background(), e.conn, serve.Options{Database: e.db, Contracts: contracts, QueryTimeout: 30 * time.Second,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// facts is what every surface must agree on of a batch.
type facts struct {
	status, verdict, firstMissing, anomalies, evidence, alive string
}

func factsOfDiagnosis(d *replay.Diagnosis) facts {
	f := facts{status: string(d.Status), verdict: d.Verdict.String(), firstMissing: d.FirstMissing}
	for _, a := range d.Anomalies {
		f.anomalies += string(a.Kind) + " "
	}
	for _, en := range d.Timeline {
		f.evidence += en.EventID + " "
	}
	for _, h := range d.Alive {
		f.alive += string(h.System) + "/" + h.Component + "@" + h.EventID + " "
	}
	return f
}

func factsOf(t *testing.T, j []byte) facts {
	t.Helper()
	var d replay.Diagnosis
	if err := json.Unmarshal(j, &d); err != nil {
		t.Fatal(err)
	}
	return factsOfDiagnosis(&d)
}

// servedFacts reads batch k from serve's batch API.
func servedFacts(t *testing.T, base string, k model.BatchKey) facts {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/batches/" + url.PathEscape(k.Pipeline) + "/" + k.BusinessDate.String() + "/" + url.PathEscape(k.BatchID))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b struct {
		Diagnosis replay.Diagnosis `json:"diagnosis"`
	}
	if resp.StatusCode != 200 {
		return facts{status: resp.Status}
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return factsOfDiagnosis(&b.Diagnosis)
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

// missingFindings reads the latest record of every missing finding: by
// batch, its status, verdict and first missing boundary.
func (e *env) missingFindings(t *testing.T) map[string][3]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := e.conn.Query(ctx, "SELECT batch, argMax(status, seq), argMax(verdict, seq), argMax(first_missing, seq) FROM "+
		e.db+"."+schema.Findings+" WHERE kind = 'missing' GROUP BY fingerprint, batch")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][3]string{}
	for rows.Next() {
		var batch string
		var f [3]string
		if err := rows.Scan(&batch, &f[0], &f[1], &f[2]); err != nil {
			t.Fatal(err)
		}
		out[batch] = f
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
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

package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// publishUpTo publishes, in file order (the generator writes each date's
// events in time order), the lines of path from line from on whose event
// time is at or before upTo, and returns the index of the first line not
// published. Bad lines go with the events around them.
func (e *env) publishUpTo(t *testing.T, lines [][]byte, from int, upTo time.Time) int {
	t.Helper()
	var dec model.Decoder
	var msgs []kafka.Message
	i := from
	for ; i < len(lines); i++ {
		m := kafka.Message{Value: lines[i]}
		if ev, err := dec.Decode(lines[i]); err == nil {
			if ev.Time.After(upTo) {
				break
			}
			m.Key = []byte(ev.PartitionKey())
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return i
	}
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Topic: e.cfg.Kafka.Topic, Balancer: &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, BatchSize: 5000, BatchBytes: 4 << 20}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	return i
}

// openFindings reads the stored findings and returns the open ones (the
// latest record of each fingerprint) as "kind" lists by batch.
func (e *env) openFindings(t *testing.T) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := e.conn.Query(ctx, "SELECT batch, kind, argMax(state, seq) AS st FROM (SELECT DISTINCT fingerprint, seq, state, kind, batch FROM "+
		e.db+"."+schema.Findings+") GROUP BY fingerprint, batch, kind HAVING st = 'open' ORDER BY batch, kind")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var batch, kind, st string
		if err := rows.Scan(&batch, &kind, &st); err != nil {
			t.Fatal(err)
		}
		out[batch] = append(out[batch], kind)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantOpen is what a diagnosis says should be open for its batch: the
// detector's conditions read from the diagnosis (overdue first missing
// boundary, failed, each breaking anomaly kind), none for an attempt
// another attempt of its date supersedes.
func wantOpen(d *replay.Diagnosis) []string {
	if d.Superseded() {
		return nil
	}
	var out []string
	for _, bs := range d.Boundaries {
		if bs.Name == d.FirstMissing && bs.Overdue {
			out = append(out, "overdue")
		}
	}
	if d.Status == replay.StatusFailed {
		out = append(out, "failed")
	}
	for _, a := range d.Anomalies {
		if a.Kind.Breaks() && !slices.Contains(out, string(a.Kind)) {
			out = append(out, string(a.Kind))
		}
	}
	sort.Strings(out)
	return out
}

// TestRerunsAgreeEverywhere: a generated history in which more than 5% of
// the batches are re-run (the first attempt failed, sent nothing, or was
// delivered with bad rows; then a re-run delivered the date, under the
// declared "{batch_id}-r2" or, for some, an undeclared "-redo"), fed to
// Kafka in arrival order while handoff detect runs on a clock that
// follows it. At the end diagnose (the file), backfill (ClickHouse) and
// the detector agree on every batch; the stored open findings are exactly
// what the diagnoses call for (plus missing for expected batches no
// attempt reached); no finding is open for a date a declared attempt
// delivered; a re-run date does not break the next one's continuity; an
// undeclared re-run is an identity_mismatch.
func TestRerunsAgreeEverywhere(t *testing.T) {
	testenv.Integration(t)
	end := time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC)
	o := gen.Options{
		Seed: 11, End: end, Days: 40, Pipelines: 5, Bad: 0.001,
		Schedules:     []gen.Schedule{gen.Daily, gen.Hourly, gen.Weekdays, gen.Daily, gen.Weekdays},
		NeverProduced: 0.01, AllKinds: true, Reruns: 0.07, Undeclared: 0.2,
	}
	path, contracts, res := genHistory(t, o)
	if n := len(res.Reruns) + len(res.Undeclared); n*100 < 5*res.Batches || len(res.Undeclared) == 0 {
		t.Fatalf("%d of %d batches re-run (%d undeclared): want at least 5%%, some undeclared", n, res.Batches, len(res.Undeclared))
	}
	now := end.AddDate(0, 0, 2)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte{'\n'})

	e := newEnvParts(t, 4)
	e.contracts = contracts
	e.cfg.ExpectFrom = res.First.Format(time.DateOnly)
	e.cfg.RetainDays = o.Days + 10
	e.cfg.Heartbeat = 0
	e.cfg.Baselines = true // diagnoseFile shows the baselines: the detector learns them too
	clk := newClock(res.First)
	d := e.startDetectorClock(t, clk.now)
	// Six hours at a time: publish what has happened by then, move the
	// clock there, and let the detector catch up before the next. The
	// steps fall at 02:00, 08:00, ... UTC: a daily first attempt (00:30 to
	// 01:40) is judged before its re-run (three hours later) arrives.
	next := 0
	for at := res.First.Add(2 * time.Hour); ; at = at.Add(6 * time.Hour) {
		if at.After(now) {
			at = now
		}
		next = e.publishUpTo(t, lines, next, at)
		clk.advance(at)
		d.caughtUp(t, at)
		if !at.Before(now) {
			break
		}
	}
	if next != len(lines) {
		t.Fatalf("%d of %d lines published by %v", next, len(lines), now)
	}
	_, _, published := d.r.Progress()
	testenv.Eventually(t, 2*time.Minute, "the published findings stored", func() (bool, string) {
		_, rows := e.findingKinds(t)
		return int64(rows) == published, fmt.Sprintf("%d stored, %d published", rows, published)
	})
	d.stop()
	det := d.r.Detector()

	want := diagnoseFile(t, path, contracts, now)
	diags := map[model.BatchKey]*replay.Diagnosis{}
	for k, w := range want {
		var dg replay.Diagnosis
		if err := json.Unmarshal(w, &dg); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		diags[k] = &dg
		got, ok := det.Diagnosis(k)
		if !ok {
			if dg.Status != replay.StatusDelivered {
				t.Errorf("%s: the detector closed it, diagnose says %s", k, dg.Status)
			}
			continue
		}
		if g := got.AppendJSON(nil); !bytes.Equal(g, w) {
			t.Errorf("%s: detector and diagnose disagree:\n%s", k, firstDiff(g, w))
		}
	}
	testenv.Eventually(t, 2*time.Minute, "ingest has stored every event", func() (bool, string) {
		n := testenv.Uncommitted(t, e.brokers, e.cfg.IngestGroup, e.cfg.Kafka.Topic)
		return n == 0, fmt.Sprintf("%d events not committed by ingest", n)
	})
	// Through the as-of date: the absent batches after End are in range too.
	bf := backfillAll(t, e, contracts, res.First, now, now)
	if len(bf) != len(want) {
		t.Errorf("backfill diagnosed %d batches, diagnose %d", len(bf), len(want))
	}
	for k, w := range want {
		if b, ok := bf[k]; !ok || !bytes.Equal(b, w) {
			t.Errorf("%s: backfill and diagnose disagree (in backfill %v)", k, ok)
		}
	}

	// Open findings: what each diagnosis calls for, and missing for the
	// expected batches no attempt of their date reached.
	open := e.openFindings(t)
	wantMissing := map[string]bool{}
	for _, k := range res.NeverProduced {
		wantMissing[k] = true
	}
	for _, k := range res.Undeclared {
		if res.FirstAttempt[k] == "absent" {
			wantMissing[k] = true
		}
	}
	for p := range res.Pipelines {
		if o.Schedule(p) == gen.Hourly {
			day := end.AddDate(0, 0, 1)
			for hh := range 24 {
				wantMissing[fmt.Sprintf("%s/%s/%s%02d", gen.PipelineName(p, gen.Hourly), day.Format(time.DateOnly), day.Format("20060102"), hh)] = true
			}
		}
	}
	for k, dg := range diags {
		w := wantOpen(dg)
		if dg.Events == 0 {
			// An expected batch no attempt reached: diagnosed as absent,
			// and the detector's finding for it is missing.
			w = []string{"missing"}
		}
		if got := open[k.String()]; !slices.Equal(got, w) {
			t.Errorf("%s (%s): open findings %v, the diagnosis calls for %v", k, dg.Status, got, w)
		}
	}
	for batch, kinds := range open {
		k, _ := model.ParseBatchKey(batch)
		if _, diagnosed := diags[k]; diagnosed {
			continue
		}
		if !slices.Equal(kinds, []string{"missing"}) || !wantMissing[batch] {
			t.Errorf("%s: open %v, and diagnose has no events of it (missing expected: %v)", batch, kinds, wantMissing[batch])
		}
	}
	for k := range wantMissing {
		if !slices.Contains(open[k], "missing") {
			t.Errorf("%s: no attempt of it arrived, yet no open missing finding (%v)", k, open[k])
		}
	}

	// Dates, through their attempts: no open finding for a delivered one,
	// and continuity of the date after a re-run date holds when the re-run
	// was declared and delivered.
	for _, base := range res.Reruns {
		bk, _ := model.ParseBatchKey(base)
		r2 := bk
		r2.BatchID += "-r2"
		if dg := diags[r2]; dg == nil || dg.Status != replay.StatusDelivered {
			t.Errorf("%s: the declared re-run is not delivered (%v)", r2, dg)
			continue
		}
		for _, k := range []string{base, r2.String()} {
			if len(open[k]) > 0 {
				t.Errorf("%s: open %v, yet its date was delivered by %s", k, open[k], r2)
			}
		}
		if dg := diags[bk]; dg != nil && !dg.Superseded() {
			t.Errorf("%s: first attempt not superseded (%+v)", bk, dg.Attempt)
		}
		c := contracts.For(bk.Pipeline)
		for nk, dg := range diags {
			if pk, ok := c.Previous(nk); ok && pk == bk && dg.Previous != nil && !dg.Previous.Delivered {
				t.Errorf("%s: previous %s not delivered (%+v), yet its re-run %s is", nk, bk, dg.Previous, r2)
			}
		}
	}
	// The stream raised findings for first attempts before their re-runs
	// came, and they ended: the live path of superseding was exercised.
	ever, _ := e.findingKinds(t)
	raised := 0
	for _, base := range res.Reruns {
		for _, kind := range []string{"failed", "missing", "row_mismatch"} {
			if slices.Contains(ever[kind], base) {
				raised++
				break
			}
		}
	}
	if raised == 0 {
		t.Errorf("no first attempt of a re-run date ever had a finding: the superseding was not exercised")
	}
	for _, base := range res.Undeclared {
		redo := base + "-redo"
		if !slices.Contains(open[redo], "identity_mismatch") {
			t.Errorf("%s: undeclared re-run without an open identity_mismatch (%v)", redo, open[redo])
		}
	}
	t.Logf("%d batches, %d declared and %d undeclared re-runs (%d first attempts raised and superseded); %d batches with open findings", len(want), len(res.Reruns), len(res.Undeclared), raised, len(open))
}

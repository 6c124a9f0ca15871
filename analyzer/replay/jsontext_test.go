package replay_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// hostile holds the characters an encoder gets wrong: quotes, escapes,
// control characters, DEL, C1 controls, bidi overrides, U+2028, invalid
// UTF-8 and a cut sequence.
var hostile = []string{"", "a", "plain-text_0123456789", "\"", "\\", "\n", "\r", "\t", "\x00", "\x1b[2J", "\x7f",
	"\u0085", "\u009b", "\u202e", "\u2066", "\u2028", "\u2029", "é", "日本", "\xff", "\xc3", "\xe2\x80", "<&>", "/"}

// rng is a source of random values; hostile says whether texts may hold
// pieces of hostile.
type rng struct {
	*rand.Rand
	hostile bool
}

// randomText joins a few pieces of hostile, or returns plain text.
func randomText(r *rng) string {
	if !r.hostile || r.IntN(3) > 0 {
		return "evt-" + string(rune('a'+r.IntN(26))) + "-0123456789abcdef"[:4+r.IntN(14)]
	}
	var s string
	for range r.IntN(4) {
		s += hostile[r.IntN(len(hostile))]
	}
	return s
}

func randomTexts(r *rng) []string {
	out := make([]string, r.IntN(4))
	for i := range out {
		out[i] = randomText(r)
	}
	return out
}

// randomTime returns times on a few days (the encoder's date cache), the
// zero time, and the odd time before 1970 or after 9999.
func randomTime(r *rng) time.Time {
	switch r.IntN(13) {
	case 0:
		return time.Time{}
	case 1:
		return time.UnixMilli(-r.Int64N(1 << 42)) // before 1970
	case 2:
		return time.UnixMilli(r.Int64N(1 << 48)) // beyond 9999 too
	case 3:
		return time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(r.IntN(3)) * time.Millisecond) // midnight
	case 5:
		return time.UnixMilli(r.Int64N(4*86400000) - 2*86400000) // either side of the epoch
	case 4:
		loc := time.FixedZone("x", 3600*(r.IntN(27)-12))
		return time.Date(2026, 9, 1+r.IntN(2), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e9), loc)
	}
	return time.Date(2026, 9, 1+r.IntN(3), 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(24 * time.Hour))))
}

// randomDiagnosis fills every field of a diagnosis with random values.
func randomDiagnosis(r *rng) replay.Diagnosis {
	d := replay.Diagnosis{
		Batch: randomText(r), Pipeline: randomText(r), BusinessDate: randomText(r), BatchID: randomText(r),
		Status: replay.Statuses[r.IntN(len(replay.Statuses))], Verdict: model.Hypothesis(r.IntN(int(model.Delivered) + 1)),
		FirstMissing: randomText(r), AsOf: randomTime(r), Contract: randomText(r), Events: r.IntN(100),
		FirstEventAt: randomTime(r), LastEventAt: randomTime(r),
		Expected: replay.Expected{BatchID: randomText(r), Artifact: randomText(r), Signal: randomText(r)},
	}
	if r.IntN(2) == 0 {
		d.Baseline = randomText(r)
	}
	for range r.IntN(6) {
		d.Hypotheses = append(d.Hypotheses, replay.Hypothesis{Name: model.Hypothesis(r.IntN(int(model.Delivered) + 1)),
			Support: replay.Supports[r.IntN(len(replay.Supports))], Evidence: randomTexts(r), Reason: randomText(r)})
	}
	for range r.IntN(3) {
		d.Anomalies = append(d.Anomalies, replay.Anomaly{Kind: replay.AnomalyKinds[r.IntN(len(replay.AnomalyKinds))], Detail: randomText(r), Evidence: randomTexts(r)})
	}
	for range r.IntN(8) {
		d.Boundaries = append(d.Boundaries, replay.BoundaryState{Name: randomText(r), At: randomTime(r), Due: randomTime(r), UsuallyBy: randomTime(r),
			Evidence: randomTexts(r), Required: r.IntN(2) == 0, Proven: r.IntN(2) == 0, Overdue: r.IntN(2) == 0, OutOfOrder: r.IntN(2) == 0})
	}
	d.NextStep = replay.NextStep{Action: replay.Actions[r.IntN(len(replay.Actions))], Summary: randomText(r)}
	if r.IntN(2) == 0 {
		d.NextStep.Signal = randomText(r)
	}
	for range r.IntN(6) {
		d.NextStep.Checks = append(d.NextStep.Checks, replay.Check{Name: randomText(r), State: replay.CheckStates[r.IntN(len(replay.CheckStates))],
			Detail: randomText(r), Evidence: randomTexts(r)})
	}
	for range r.IntN(12) {
		d.Timeline = append(d.Timeline, replay.Entry{EventID: randomText(r), Type: model.EventType(randomText(r)), Time: randomTime(r),
			System: model.System(randomText(r)), Component: randomText(r), Object: randomText(r), Checksum: randomText(r), Error: randomText(r),
			Rows: r.Int64N(1 << 40), HasRows: r.IntN(2) == 0, Bytes: -r.Int64N(1 << 40), HasBytes: r.IntN(2) == 0, Attempt: r.Int64N(9), HasAttempt: r.IntN(2) == 0})
	}
	if r.IntN(2) == 0 {
		d.Previous = &replay.PreviousBatch{Batch: randomText(r), Seen: r.IntN(2) == 0, Delivered: r.IntN(2) == 0, Verdict: model.Hypothesis(r.IntN(int(model.Delivered) + 1))}
	}
	if r.IntN(2) == 0 {
		d.Attempt = &replay.AttemptInfo{Of: randomText(r), Rerun: r.IntN(5), Attempts: randomTexts(r)}
		if r.IntN(2) == 0 {
			d.Attempt.SupersededBy = randomText(r)
		}
	}
	if r.IntN(3) == 0 {
		d.Blocked = &replay.Blocked{}
		for range r.IntN(3) {
			d.Blocked.By = append(d.Blocked.By, replay.Link{Batch: randomText(r), Seen: r.IntN(2) == 0, FirstMissing: randomText(r)})
		}
		for range r.IntN(3) {
			d.Blocked.Roots = append(d.Blocked.Roots, replay.Link{Batch: randomText(r), Verdict: model.Delivered})
		}
	}
	for range r.IntN(3) {
		d.Alive = append(d.Alive, replay.Heartbeat{System: model.System(randomText(r)), Component: randomText(r), At: randomTime(r), EventID: randomText(r)})
	}
	return d
}

// checkText checks AppendJSONText against the reference encoder: the
// same bytes, appended after what b held, and plain only when every byte
// is printable ASCII, so that model.TextWriter passes them on unchanged.
func checkText(t *testing.T, name string, d *replay.Diagnosis) (plain bool) {
	t.Helper()
	want := refAppendJSON([]byte("x"), d)
	got, plain := d.AppendJSONText([]byte("x"))
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: AppendJSONText differs from the reference encoder\nwant %q\n got %q", name, want, got)
	}
	if again := d.AppendJSON([]byte("x")); !bytes.Equal(again, want) {
		t.Fatalf("%s: AppendJSON differs from the reference encoder\nwant %q\n got %q", name, want, again)
	}
	if !plain {
		return false
	}
	for i, c := range got {
		if c < 0x20 || c >= 0x7f {
			t.Fatalf("%s: plain, but byte %d is %#x: %q", name, i, c, got)
		}
	}
	var out bytes.Buffer
	w := model.NewTextWriter(&out)
	if _, err := w.Write(got); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), got) {
		t.Fatalf("%s: plain, but the TextWriter changed it\n  in %q\n out %q", name, got, out.Bytes())
	}
	return true
}

// TestAppendJSONTextMatchesReference compares the encoder with the one it
// replaced over random diagnoses (every field, hostile text, times on
// either side of midnight, before 1970 and after 9999) and over the
// replay's own, and checks what it calls plain is.
func TestAppendJSONTextMatchesReference(t *testing.T) {
	plain, not := 0, 0
	for seed := uint64(0); seed < 3000; seed++ {
		r := &rng{rand.New(rand.NewPCG(seed, 7)), seed%2 == 0}
		d := randomDiagnosis(r)
		switch p := checkText(t, "random", &d); {
		case p:
			plain++
		case !r.hostile:
			t.Fatalf("seed %d: printable ASCII text only, yet not plain: %q", seed, d.AppendJSON(nil))
		default:
			not++
		}
	}
	c := seedContract()
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		date := model.Date{Year: 2026, Month: 9, Day: 1 + int(seed%28)}
		d := replay.Replay(randomBatch(r, "p<&>\u2028", date), c, date.In(time.UTC).Add(50*time.Hour), replay.Context{})
		checkText(t, "replayed", &d)
		d = replay.Replay(deliveredBatch(r, "pipeline-7.daily", date), c, date.In(time.UTC).Add(50*time.Hour), replay.Context{})
		if !checkText(t, "replayed delivered", &d) {
			t.Fatalf("a diagnosis of ASCII names is not plain: %s", d.AppendJSON(nil))
		}
	}
	// Both kinds were exercised.
	if plain < 100 || not < 100 {
		t.Fatalf("random diagnoses: %d plain, %d not: the generator no longer covers both", plain, not)
	}
}

// FuzzAppendJSONText puts fuzzed text and times into every kind of
// string and time field and checks the encoder against the reference.
func FuzzAppendJSONText(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, s+"x", int64(1788220800123), int64(-1))
	}
	f.Fuzz(func(t *testing.T, a, b string, ms, ms2 int64) {
		t1, t2 := time.UnixMilli(ms), time.UnixMilli(ms2).Add(time.Duration(ms%1e6))
		d := replay.Diagnosis{
			Batch: a, Pipeline: b, BusinessDate: a + b, BatchID: b + a, Status: replay.Status(a), FirstMissing: b,
			Hypotheses: []replay.Hypothesis{{Support: replay.Support(b), Evidence: []string{a, b}, Reason: a}},
			Anomalies:  []replay.Anomaly{{Kind: replay.AnomalyKind(a), Detail: b}},
			AsOf:       t1, Contract: a, Baseline: b,
			Boundaries:   []replay.BoundaryState{{Name: a, At: t1, Due: t2, UsuallyBy: t1.Add(time.Hour)}},
			NextStep:     replay.NextStep{Action: replay.Action(b), Summary: a, Signal: b, Checks: []replay.Check{{Name: b, State: replay.CheckState(a), Detail: b}}},
			FirstEventAt: t2, LastEventAt: t1,
			Timeline: []replay.Entry{{EventID: a, Type: model.EventType(b), Time: t1, System: model.System(a), Component: b, Object: a, Checksum: b, Error: a},
				{EventID: b, Time: t2}, {EventID: a, Time: t1.Add(time.Duration(ms2))}},
			Expected: replay.Expected{BatchID: a, Artifact: b, Signal: a},
			Previous: &replay.PreviousBatch{Batch: b, Seen: true},
			Attempt:  &replay.AttemptInfo{Of: a, Attempts: []string{b}, SupersededBy: a},
			Blocked:  &replay.Blocked{By: []replay.Link{{Batch: a, FirstMissing: b}}},
			Alive:    []replay.Heartbeat{{System: model.System(b), Component: a, At: t2, EventID: b}},
		}
		checkText(t, "fuzz", &d)
	})
}

// BenchmarkAppendJSON encodes diagnoses of the seed contract's batches
// (delivered ones and others) with the encoder and with the reference,
// for a -cpu 1 comparison of the two.
func BenchmarkAppendJSON(b *testing.B) {
	c := seedContract()
	var ds []replay.Diagnosis
	for seed := uint64(0); seed < 64; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		date := model.Date{Year: 2026, Month: 9, Day: 1 + int(seed%28)}
		events := deliveredBatch(r, "pipeline-042.daily", date)
		if seed%4 == 0 {
			events = randomBatch(r, "pipeline-042.daily", date)
		}
		ds = append(ds, replay.Replay(events, c, date.In(time.UTC).Add(50*time.Hour), replay.Context{}))
	}
	for _, enc := range []struct {
		name string
		fn   func([]byte, *replay.Diagnosis) []byte
	}{
		{"encoder", func(b []byte, d *replay.Diagnosis) []byte { b, _ = d.AppendJSONText(b); return b }},
		{"reference", refAppendJSON},
	} {
		b.Run(enc.name, func(b *testing.B) {
			buf := make([]byte, 0, 1<<16)
			n := 0
			for i := 0; b.Loop(); i++ {
				buf = enc.fn(buf[:0], &ds[i%len(ds)])
				n += len(buf)
			}
			b.SetBytes(int64(n / max(1, b.N)))
		})
	}
}

package report_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/report"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

const pipe = "account-balance-snapshot.daily"

var asOf = time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)

// ev builds one event of batch 2026-09-30/20260930 of the seed pipeline.
func ev(id string, typ model.EventType, at string, sys model.System, f func(*model.Event)) model.Event {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		panic(err)
	}
	e := model.Event{
		Spec: model.SpecV1, ID: id, Type: typ, Time: t, Pipeline: pipe,
		BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930",
		System: sys, Component: string(sys) + "-1",
	}
	if f != nil {
		f(&e)
	}
	return e
}

func obj(name string) func(*model.Event) { return func(e *model.Event) { e.Object = name } }

// seedEvents are the seed case's 20260930 events: produced, finalized,
// signaled at the source and transferred, but no signal at the receiver.
func seedEvents() []model.Event {
	return []model.Event{
		ev("e1", model.JobStarted, "2026-09-30T17:00:00Z", model.Producer, nil),
		ev("e2", model.ArtifactFinalized, "2026-09-30T17:14:02Z", model.Producer, func(e *model.Event) {
			e.Object, e.Rows, e.HasRows, e.Checksum = "account_balance_snapshot_20260930.csv", 120345, true, "sha256:9f2c"
		}),
		ev("e3", model.JobSucceeded, "2026-09-30T17:14:05Z", model.Producer, nil),
		ev("e4", model.SignalPublished, "2026-09-30T17:14:06Z", model.Producer, obj("account_balance_snapshot_20260930.flag")),
		ev("e5", model.ArtifactTransferred, "2026-09-30T17:20:05Z", model.Exchange, func(e *model.Event) {
			e.Object, e.Checksum = "account_balance_snapshot_20260930.csv", "sha256:9f2c"
		}),
	}
}

func seedContract(t testing.TB) *contract.Contract {
	t.Helper()
	c, err := contract.Parse("seed.yaml", []byte(`
pipeline: account-balance-snapshot.daily
schedule: daily
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func diagnose(events []model.Event, c *contract.Contract, ctx replay.Context) *replay.Diagnosis {
	d := replay.Replay(events, c, asOf, ctx)
	return &d
}

func text(t *testing.T, d *replay.Diagnosis) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.Text(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTextSectionsInSeedOrder(t *testing.T) {
	out := text(t, diagnose(seedEvents(), seedContract(t), replay.Context{}))
	// The order of the seed case: symptom, chain, evidence per side,
	// located break, safe next step (docs/diagnosis.md).
	sections := []string{"BATCH ", "\nSYMPTOM\n", "\nCHAIN ", "\nEVIDENCE\n", "\nHYPOTHESES\n",
		"\nANOMALIES\n", "\nLOCATED BREAK\n", "\nCAVEATS\n", "\nNEXT STEP\n"}
	at := -1
	for _, s := range sections {
		i := strings.Index(out, s)
		if i < 0 {
			t.Fatalf("section %q missing:\n%s", strings.TrimSpace(s), out)
		}
		if i <= at {
			t.Errorf("section %q out of order", strings.TrimSpace(s))
		}
		at = i
	}
	for _, want := range []string{
		"status LATE -- verdict not_identified; the job says SUCCESS, the delivery does not.",
		"First missing boundary: signal_delivered",
		"The signal expected from business_date + batch_id is account_balance_snapshot_20260930.flag",
	} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// flat joins a report's words with single spaces, so that a phrase can be
// found wherever the wrapping broke its line.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestTextChain(t *testing.T) {
	noExchange := seedContract(t)
	noExchange.Required = noExchange.Required.Without(model.Transferred).Without(model.SignalDelivered)
	unsignaled := seedEvents()
	unsignaled = append(unsignaled[:3], unsignaled[4]) // no signal.published

	tests := []struct {
		name   string
		d      *replay.Diagnosis
		lines  []string // each must start a line of the chain (after trimming)
		absent []string
	}{
		{
			name: "seed",
			d:    diagnose(seedEvents(), seedContract(t), replay.Context{}),
			lines: []string{
				"✓ produced          2026-09-30 17:14:05 UTC",
				"✓ transferred       2026-09-30 17:20:05 UTC",
				"✗ signal_delivered  missing",
				"✗ consumed          missing",
				"due 2026-10-01 17:20:05 UTC; evidence e5",
			},
			absent: []string{"out of order", "- transferred"},
		},
		{
			name: "break at signaled, transfer out of order",
			d:    diagnose(unsignaled, seedContract(t), replay.Context{}),
			lines: []string{
				"✗ signaled          missing",
				"due 2026-10-01 17:20:05 UTC; out of order: proven although signaled below it is missing;",
			},
		},
		{
			name: "contract without an exchange hop",
			d:    diagnose(seedEvents()[:4], noExchange, replay.Context{}),
			lines: []string{
				"- transferred       not required",
				"- signal_delivered  not required",
				"✗ identified        missing",
			},
			absent: []string{"✗ transferred"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := text(t, tt.d)
			chain := out[strings.Index(out, "\nCHAIN "):strings.Index(out, "\nEVIDENCE\n")]
			for _, want := range tt.lines {
				if !hasLinePrefix(chain, want) {
					t.Errorf("chain has no line starting %q:\n%s", want, chain)
				}
			}
			for _, no := range tt.absent {
				if strings.Contains(chain, no) {
					t.Errorf("chain has %q:\n%s", no, chain)
				}
			}
			// Exactly one marker, on the first missing boundary's line.
			if n := strings.Count(chain, "<- first missing"); n != 1 {
				t.Fatalf("%d first-missing markers, want 1:\n%s", n, chain)
			}
			for _, l := range strings.Split(chain, "\n") {
				if strings.Contains(l, "<- first missing") && !strings.Contains(l, " "+tt.d.FirstMissing+" ") {
					t.Errorf("marker on %q, want the %s line", l, tt.d.FirstMissing)
				}
			}
		})
	}
}

func hasLinePrefix(text, prefix string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return true
		}
	}
	return false
}

func TestTextOverdue(t *testing.T) {
	d := diagnose(seedEvents(), contract.Default(pipe), replay.Context{})
	out := text(t, d)
	// Default rule: due 24h after the latest boundary event (17:20:05),
	// so 1d 6h 40m (rounded to the minute) overdue as of 2026-10-03.
	for _, want := range []string{
		"First missing boundary: signal_delivered, due 2026-10-01 17:20:05 UTC, overdue by 1d 6h 40m.",
		"overdue by 1d 6h 40m",
	} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	early := replay.Replay(seedEvents(), contract.Default(pipe), time.Date(2026, 9, 30, 18, 0, 0, 0, time.UTC), replay.Context{})
	if out := text(t, &early); !strings.Contains(out, "not yet due") || strings.Contains(out, "overdue") {
		t.Errorf("as of 18:00 the signal is not yet due:\n%s", out)
	}
}

func TestTextCaveats(t *testing.T) {
	const (
		noAttempt = "No attempt recorded is not a consumer failure"
		heartbeat = "A heartbeat is not proof a batch was handled"
		dflt      = "Skipped checks: identity_mismatch (it needs name templates"
		dropped   = "The contract does not require transferred, signal_delivered"
	)
	consumerRan := append(seedEvents(),
		ev("e6", model.SignalTransferred, "2026-09-30T17:21:00Z", model.Exchange, obj("account_balance_snapshot_20260930.flag")),
		ev("e7", model.BatchIdentified, "2026-09-30T17:25:00Z", model.Consumer, nil),
		ev("e8", model.ConsumeStarted, "2026-09-30T17:25:01Z", model.Consumer, nil),
		ev("e9", model.ConsumeFailed, "2026-09-30T17:26:00Z", model.Consumer, func(e *model.Event) { e.Error = "disk full" }),
	)
	noExchange := seedContract(t)
	noExchange.Required = noExchange.Required.Without(model.Transferred).Without(model.SignalDelivered)
	alive := replay.Context{Alive: []replay.Heartbeat{{System: model.Consumer, Component: "consumer-1", At: asOf.Add(-time.Hour), EventID: "hb1"}}}

	tests := []struct {
		name      string
		d         *replay.Diagnosis
		want, not []string
	}{
		{"seed under its contract", diagnose(seedEvents(), seedContract(t), replay.Context{}), []string{noAttempt}, []string{heartbeat, dflt, dropped}},
		{"default contract", diagnose(seedEvents(), contract.Default(pipe), replay.Context{}), []string{noAttempt, dflt}, []string{heartbeat}},
		{"heartbeat", diagnose(seedEvents(), seedContract(t), alive), []string{noAttempt, heartbeat}, []string{dflt}},
		{"consumer ran and failed", diagnose(consumerRan, seedContract(t), replay.Context{}), nil, []string{noAttempt}},
		{"dropped boundaries", diagnose(seedEvents()[:4], noExchange, replay.Context{}), []string{dropped}, []string{dflt}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := text(t, tt.d)
			cav := flat(out[strings.Index(out, "\nCAVEATS\n"):strings.Index(out, "\nNEXT STEP\n")])
			for _, w := range tt.want {
				if !strings.Contains(cav, w) {
					t.Errorf("caveats lack %q:\n%s", w, cav)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(cav, n) {
					t.Errorf("caveats have %q:\n%s", n, cav)
				}
			}
		})
	}
}

func TestTextNextStep(t *testing.T) {
	d := &replay.Diagnosis{
		Batch: "p/2026-09-30/20260930", Status: replay.StatusLate, Verdict: model.NotIdentified,
		FirstMissing: "signal_delivered", Contract: "p.yaml", AsOf: asOf,
		NextStep: replay.NextStep{
			Action:  "restore_signal",
			Summary: "do not restore yet",
			Signal:  "p_20260930.flag",
			Checks: []replay.Check{
				{Name: "artifact_final", State: replay.CheckPass, Detail: "final", Evidence: []string{"e2"}},
				{Name: "identity_matches", State: replay.CheckFail, Detail: "bad name", Evidence: []string{"e5"}},
				{Name: "rows_valid", State: replay.CheckUnknown, Detail: "count by hand"},
				{Name: "odd", State: "maybe", Detail: "state from a newer replay"},
			},
		},
	}
	out := text(t, d)
	for _, want := range []string{
		"  restore_signal: do not restore yet\n",
		"    [pass] artifact_final: final [e2]\n",
		"    [FAIL] identity_matches: bad name [e5]\n",
		"    [ ? ]  rows_valid: count by hand\n",
		"    [maybe] odd: state from a newer replay\n",
		"Signal name derived from the batch identity: p_20260930.flag\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("next step lacks %q:\n%s", want, out)
		}
	}

	d.NextStep.Signal = ""
	if out := text(t, d); !strings.Contains(out, "Signal name: not derived") {
		t.Errorf("restore_signal without a derived name must say so:\n%s", out)
	}
}

func TestTextSides(t *testing.T) {
	d := &replay.Diagnosis{
		Batch: "p/2026-09-30/1", Status: replay.StatusInProgress, Verdict: model.NotProduced, AsOf: asOf, Contract: "default",
		// The operator's event comes first in time; the report still
		// lists the sides left to right along the chain.
		Timeline: []replay.Entry{
			{EventID: "op1", Type: model.SignalRestored, Time: asOf.Add(-2 * time.Hour), System: model.Operator, Object: "f.flag"},
			{EventID: "p1", Type: model.JobStarted, Time: asOf.Add(-time.Hour), System: model.Producer},
		},
	}
	out := text(t, d)
	ev := out[strings.Index(out, "\nEVIDENCE\n"):strings.Index(out, "\nHYPOTHESES\n")]
	// Left to right along the chain, whatever order the sides came in; a
	// side with no facts says so instead of vanishing.
	want := "\nEVIDENCE\n  producer\n    - 2026-10-02T23:00:00.000Z job started [p1]\n  exchange\n    - no events recorded from this side\n" +
		"  consumer\n    - no events recorded from this side\n  operator\n    - 2026-10-02T22:00:00.000Z completion signal \"f.flag\" restored [op1]\n"
	if ev != want {
		t.Errorf("evidence section:\n%s\nwant:\n%s", ev, want)
	}
	d.Timeline = d.Timeline[1:]
	if out := text(t, d); strings.Contains(out, "  operator\n") {
		t.Errorf("an operator that did nothing is not shown:\n%s", out)
	}
}

func TestTextLayout(t *testing.T) {
	ds := []replay.Diagnosis{
		*diagnose(seedEvents(), seedContract(t), replay.Context{}),
		*diagnose(seedEvents()[:1], contract.Default(pipe), replay.Context{}),
	}
	var a, b bytes.Buffer
	if err := report.TextAll(&a, ds); err != nil {
		t.Fatal(err)
	}
	if err := report.TextAll(&b, ds); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatal("two renderings of the same diagnoses differ")
	}
	for i, l := range strings.Split(a.String(), "\n") {
		if w := utf8.RuneCountInString(l); w > report.Width && strings.Count(strings.TrimSpace(l), " ") > 0 {
			t.Errorf("line %d is %d columns wide (max %d): %q", i+1, w, report.Width, l)
		}
		if l != strings.TrimRight(l, " ") {
			t.Errorf("line %d has trailing spaces: %q", i+1, l)
		}
		for _, r := range l {
			if (r >= utf8.RuneSelf && r != '✓' && r != '✗') || r == 0x1b || r == '\t' {
				t.Errorf("line %d has %q: plain text only, no colour codes", i+1, r)
			}
		}
	}
}

func TestTextAllSummary(t *testing.T) {
	late := diagnose(seedEvents(), seedContract(t), replay.Context{})
	started := diagnose(seedEvents()[:1], contract.Default(pipe), replay.Context{})
	delivered := &replay.Diagnosis{Batch: "a/2026-09-29/20260929", Status: replay.StatusDelivered, Verdict: model.Delivered, AsOf: asOf, Contract: "default"}
	var b bytes.Buffer
	if err := report.TextAll(&b, []replay.Diagnosis{*delivered, *late, *started}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "\n"+strings.Repeat("=", report.Width)+"\n"); n != 3 {
		t.Errorf("%d rule lines, want one after each of 3 reports", n)
	}
	sum := out[strings.Index(out, "SUMMARY"):]
	want := "SUMMARY  (3 batches)\n" +
		"  batch                                               status     verdict         first_missing\n" +
		"  a/2026-09-29/20260929                               delivered  delivered       -\n" +
		"  account-balance-snapshot.daily/2026-09-30/20260930  late       not_identified  signal_delivered\n" +
		"  account-balance-snapshot.daily/2026-09-30/20260930  late       not_produced    produced\n"
	if sum != want {
		t.Errorf("summary:\n%s\nwant:\n%s", sum, want)
	}

	b.Reset()
	if err := report.TextAll(&b, nil); err != nil {
		t.Fatal(err)
	}
	if b.String() != "SUMMARY  (0 batches)\n" {
		t.Errorf("no diagnoses: %q", b.String())
	}
}

func TestJSON(t *testing.T) {
	d := diagnose(seedEvents(), seedContract(t), replay.Context{})
	var b bytes.Buffer
	if err := report.JSON(&b, []replay.Diagnosis{*d, *d}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	// One compact diagnosis per line, so line tools can cut the array.
	if len(lines) != 5 || lines[0] != "[" || !strings.HasPrefix(lines[1], `{"batch":`) || !strings.HasSuffix(lines[1], "},") ||
		!strings.HasPrefix(lines[2], `{"batch":`) || lines[3] != "]" || lines[4] != "" {
		t.Errorf("want [, one diagnosis per line, ], and a trailing newline; got:\n%.300s", out)
	}
	if strings.Contains(out, `\u003e`) || strings.Contains(out, `\u0026`) {
		t.Error("JSON escapes HTML characters; nobody reads it in a browser")
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("decoded %d diagnoses, want 2", len(got))
	}
	// The field names docs/diagnosis.md fixes.
	for _, k := range []string{"batch", "pipeline", "business_date", "batch_id", "status", "verdict", "first_missing", "hypotheses", "anomalies", "as_of"} {
		if _, ok := got[0][k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if got[0]["first_missing"] != "signal_delivered" || got[0]["verdict"] != "not_identified" {
		t.Errorf("first_missing %v, verdict %v", got[0]["first_missing"], got[0]["verdict"])
	}
	h := got[0]["hypotheses"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "verdict", "evidence"} {
		if _, ok := h[k]; !ok {
			t.Errorf("hypothesis lacks %q", k)
		}
	}
	a := got[0]["anomalies"].([]any)[0].(map[string]any)
	for _, k := range []string{"kind", "detail", "evidence"} {
		if _, ok := a[k]; !ok {
			t.Errorf("anomaly lacks %q", k)
		}
	}

	for _, empty := range [][]replay.Diagnosis{nil, {}} {
		b.Reset()
		if err := report.JSON(&b, empty); err != nil {
			t.Fatal(err)
		}
		if b.String() != "[]\n" {
			t.Errorf("no diagnoses: %q, want []", b.String())
		}
	}
}

func TestJSONOne(t *testing.T) {
	d := diagnose(seedEvents(), seedContract(t), replay.Context{})
	var one, all bytes.Buffer
	if err := report.JSONOne(&one, d); err != nil {
		t.Fatal(err)
	}
	if err := report.JSON(&all, []replay.Diagnosis{*d}); err != nil {
		t.Fatal(err)
	}
	var a replay.Diagnosis
	var b []replay.Diagnosis
	if err := json.Unmarshal(one.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(all.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b[0])
	if !bytes.Equal(ja, jb) {
		t.Error("JSONOne and JSON disagree on the same diagnosis")
	}
	if !strings.HasPrefix(one.String(), "{\n  \"batch\": ") || !strings.HasSuffix(one.String(), "}\n") {
		t.Errorf("want one indented object and a newline, got %.40q", one.String())
	}
}

type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestErrors(t *testing.T) {
	d := diagnose(seedEvents(), seedContract(t), replay.Context{})
	calls := []struct {
		name string
		err  error
	}{
		{"Text", report.Text(failWriter{}, d)},
		{"TextAll", report.TextAll(failWriter{}, []replay.Diagnosis{*d})},
		{"JSON", report.JSON(failWriter{}, []replay.Diagnosis{*d})},
		{"JSONOne", report.JSONOne(failWriter{}, d)},
	}
	for _, c := range calls {
		if !errors.Is(c.err, errWrite) {
			t.Errorf("%s: error %v, want the writer's", c.name, c.err)
		}
	}
	var b bytes.Buffer
	if err := report.Text(&b, nil); err == nil || b.Len() != 0 {
		t.Errorf("Text(nil) = %v, wrote %d bytes; want an error and nothing written", err, b.Len())
	}
	if err := report.JSONOne(&b, nil); err == nil || b.Len() != 0 {
		t.Errorf("JSONOne(nil) = %v, wrote %d bytes; want an error and nothing written", err, b.Len())
	}
}

func BenchmarkText(b *testing.B) {
	d := diagnose(seedEvents(), seedContract(b), replay.Context{})
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := report.Text(&buf, d); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

func BenchmarkJSON(b *testing.B) {
	ds := []replay.Diagnosis{*diagnose(seedEvents(), seedContract(b), replay.Context{})}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := report.JSON(&buf, ds); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// TestTextZone checks that the report's deadlines and proofs show the
// contract's zone beside UTC, that a contract without a zone shows UTC
// alone, and that Options.Zone replaces the contract's zone.
func TestTextZone(t *testing.T) {
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	shanghai := seedContract(t)
	shanghai.Location = load("Asia/Shanghai")
	for _, tc := range []struct {
		name      string
		c         *contract.Contract
		opt       report.Options
		want, not []string
	}{
		{"contract zone", shanghai, report.Options{},
			[]string{"✓ transferred       2026-09-30 17:20:05 UTC (01:20:05 Asia/Shanghai, next day)", "as of 2026-10-03 00:00 UTC (08:00 Asia/Shanghai);"}, nil},
		{"no zone", seedContract(t), report.Options{},
			[]string{"✓ transferred       2026-09-30 17:20:05 UTC"}, []string{"Asia/Shanghai", "UTC ("}},
		{"reader's zone", shanghai, report.Options{Zone: load("America/New_York")},
			[]string{"✓ transferred       2026-09-30 17:20:05 UTC (13:20:05 America/New_York)", "as of 2026-10-03 00:00 UTC (20:00 America/New_York, previous day);"}, []string{"Asia/Shanghai"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.opt.Text(&b, diagnose(seedEvents(), tc.c, replay.Context{})); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			head := out[:strings.Index(out, "\nEVIDENCE\n")]
			for _, w := range tc.want {
				if !strings.Contains(head, w) {
					t.Errorf("report lacks %q:\n%s", w, head)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(head, n) {
					t.Errorf("report has %q:\n%s", n, head)
				}
			}
		})
	}
}

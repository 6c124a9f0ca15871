package replay_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// TestAppendJSONRoundTrips checks the hand-written encoder with
// encoding/json as the independent party: its output is valid JSON, it
// decodes into a struct written here from docs/diagnosis.md with the
// values of the diagnosis, and it decodes back to the same diagnosis.
func TestAppendJSONRoundTrips(t *testing.T) {
	c := seedContract()
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		date := model.Date{Year: 2026, Month: 9, Day: 1 + int(seed%28)}
		d := replay.Replay(randomBatch(r, "p<&>\u2028", date), c, date.In(time.UTC).Add(50*time.Hour), replay.Context{})
		b := d.AppendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("seed %d: invalid JSON: %s", seed, b)
		}
		var wire wireDiagnosis
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&wire); err != nil {
			t.Fatalf("seed %d: %v in %s", seed, err, b)
		}
		if msg := wire.differs(&d); msg != "" {
			t.Fatalf("seed %d: %s\n%s", seed, msg, b)
		}
		var back replay.Diagnosis
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(normalize(back), normalize(d)) {
			t.Fatalf("seed %d: round trip changed the diagnosis\nwant %+v\n got %+v", seed, d, back)
		}
	}
}

// wireDiagnosis is the machine-readable diagnosis as docs/diagnosis.md
// names its fields, with plain Go types: it shares no code with the
// encoder. Unknown fields are refused, so a field the encoder adds must
// be added here too.
type wireDiagnosis struct {
	Batch        string `json:"batch"`
	Pipeline     string `json:"pipeline"`
	BusinessDate string `json:"business_date"`
	BatchID      string `json:"batch_id"`
	Status       string `json:"status"`
	Verdict      string `json:"verdict"`
	FirstMissing string `json:"first_missing"`
	Hypotheses   []struct {
		Name     string   `json:"name"`
		Verdict  string   `json:"verdict"`
		Evidence []string `json:"evidence"`
		Reason   string   `json:"reason"`
	} `json:"hypotheses"`
	Anomalies []struct {
		Kind     string   `json:"kind"`
		Detail   string   `json:"detail"`
		Evidence []string `json:"evidence"`
	} `json:"anomalies"`
	AsOf       string            `json:"as_of"`
	Contract   string            `json:"contract"`
	Boundaries []json.RawMessage `json:"boundaries"`
	NextStep   struct {
		Action  string `json:"action"`
		Summary string `json:"summary"`
		Checks  []struct {
			Name     string   `json:"name"`
			State    string   `json:"state"`
			Detail   string   `json:"detail"`
			Evidence []string `json:"evidence"`
		} `json:"checks"`
		Signal string `json:"signal"`
	} `json:"next_step"`
	Events       int               `json:"events"`
	FirstEventAt string            `json:"first_event_at"`
	LastEventAt  string            `json:"last_event_at"`
	Timeline     []json.RawMessage `json:"timeline"`
	Expected     map[string]string `json:"expected"`
	Previous     map[string]any    `json:"previous"`
	Alive        []json.RawMessage `json:"alive"`
}

// differs compares the decoded wire form with the diagnosis it came from.
func (w *wireDiagnosis) differs(d *replay.Diagnosis) string {
	switch {
	case w.Batch != d.Batch || w.Pipeline != d.Pipeline || w.BusinessDate != d.BusinessDate || w.BatchID != d.BatchID:
		return "identity fields differ"
	case w.Status != string(d.Status) || w.Verdict != d.Verdict.String() || w.FirstMissing != d.FirstMissing:
		return "status " + w.Status + ", verdict " + w.Verdict + ", first_missing " + w.FirstMissing + " differ from the diagnosis"
	case w.AsOf != d.AsOf.UTC().Format(model.TimeLayout):
		return "as_of " + w.AsOf + " is not " + d.AsOf.UTC().Format(model.TimeLayout)
	case len(w.Hypotheses) != len(d.Hypotheses) || len(w.Anomalies) != len(d.Anomalies) ||
		len(w.Boundaries) != len(d.Boundaries) || len(w.Timeline) != len(d.Timeline) || w.Events != d.Events:
		return "list lengths differ"
	case w.NextStep.Action != string(d.NextStep.Action) || w.NextStep.Summary != d.NextStep.Summary ||
		w.NextStep.Signal != d.NextStep.Signal || len(w.NextStep.Checks) != len(d.NextStep.Checks):
		return "next_step.action " + w.NextStep.Action + " differs"
	case (w.Previous == nil) != (d.Previous == nil):
		return "previous present in one only"
	}
	for i, h := range d.Hypotheses {
		wh := w.Hypotheses[i]
		if wh.Name != h.Name.String() || wh.Verdict != string(h.Support) || !slices.Equal(wh.Evidence, h.Evidence) || wh.Reason != h.Reason {
			return "hypothesis " + wh.Name + " " + wh.Verdict + " differs"
		}
	}
	for i, c := range d.NextStep.Checks {
		if w.NextStep.Checks[i].Name != c.Name || w.NextStep.Checks[i].State != string(c.State) {
			return "check " + c.Name + " differs"
		}
	}
	return ""
}

// TestAppendJSONLiteral pins the exact bytes of one diagnosis that uses
// every optional part: zero times, omitted numbers, escapes, a seen
// previous batch. The expected text is written out by hand.
func TestAppendJSONLiteral(t *testing.T) {
	at := time.Date(2026, 9, 30, 17, 14, 5, 10e6, time.FixedZone("CST", 8*3600))
	d := replay.Diagnosis{
		Batch: "p/2026-09-30/1", Pipeline: "p", BusinessDate: "2026-09-30", BatchID: "1",
		Status: replay.StatusLate, Verdict: model.NotIdentified, FirstMissing: "signal_delivered",
		Hypotheses: []replay.Hypothesis{{Name: model.NotConsumed, Support: replay.NoEvidence, Evidence: []string{}, Reason: "a \"quoted\" <reason>"}},
		Anomalies:  []replay.Anomaly{{Kind: replay.Late, Detail: "late", Evidence: []string{"e1", "e2"}}},
		AsOf:       at, Contract: "c.yaml",
		Boundaries: []replay.BoundaryState{
			{Name: "produced", At: at, Evidence: []string{"e1"}, Required: true, Proven: true},
			{Name: "signal_delivered", Due: at, Evidence: []string{}, Required: true, Overdue: true, OutOfOrder: true},
		},
		NextStep: replay.NextStep{Action: replay.ActionRestoreSignal, Summary: "s", Signal: "f.flag",
			Checks: []replay.Check{{Name: "rows_valid", State: replay.CheckUnknown, Detail: "d", Evidence: []string{}}}},
		Events: 2,
		Timeline: []replay.Entry{
			{EventID: "e1", Type: model.JobSucceeded, Time: at, System: model.Producer, Rows: 0, HasRows: true},
			{EventID: "e2", Type: model.ArtifactFinalized, Time: at, System: model.Producer, Component: "c", Object: "o", Bytes: 7, Checksum: "x", Attempt: 2, HasAttempt: true, Error: "e"},
		},
		Expected:     replay.Expected{Artifact: "a.csv"},
		Previous:     &replay.PreviousBatch{Batch: "p/2026-09-29/0", Seen: true, Verdict: model.Delivered, Delivered: true},
		Alive:        []replay.Heartbeat{{System: model.Consumer, Component: "c1", At: at, EventID: "h1"}},
		FirstEventAt: at,
	}
	const want = `{"batch":"p/2026-09-30/1","pipeline":"p","business_date":"2026-09-30","batch_id":"1",` +
		`"status":"late","verdict":"not_identified","first_missing":"signal_delivered",` +
		`"hypotheses":[{"name":"not_consumed","verdict":"no_evidence","evidence":[],"reason":"a \"quoted\" <reason>"}],` +
		`"anomalies":[{"kind":"late","detail":"late","evidence":["e1","e2"]}],` +
		`"as_of":"2026-09-30T09:14:05.010Z","contract":"c.yaml",` +
		`"boundaries":[{"name":"produced","required":true,"proven":true,"at":"2026-09-30T09:14:05.010Z","overdue":false,"evidence":["e1"],"out_of_order":false},` +
		`{"name":"signal_delivered","required":true,"proven":false,"due":"2026-09-30T09:14:05.010Z","overdue":true,"evidence":[],"out_of_order":true}],` +
		`"next_step":{"action":"restore_signal","summary":"s","checks":[{"name":"rows_valid","state":"unknown","detail":"d","evidence":[]}],"signal":"f.flag"},` +
		`"events":2,"first_event_at":"2026-09-30T09:14:05.010Z","last_event_at":"0001-01-01T00:00:00.000Z",` +
		`"timeline":[{"event_id":"e1","type":"job.succeeded","time":"2026-09-30T09:14:05.010Z","system":"producer","rows":0},` +
		`{"event_id":"e2","type":"artifact.finalized","time":"2026-09-30T09:14:05.010Z","system":"producer","component":"c","object":"o","checksum":"x","error":"e","attempt":2}],` +
		`"expected":{"artifact":"a.csv"},` +
		`"previous":{"batch":"p/2026-09-29/0","seen":true,"delivered":true,"verdict":"delivered"},` +
		`"alive":[{"system":"consumer","component":"c1","at":"2026-09-30T09:14:05.010Z","event_id":"h1"}]}`
	if got := string(d.AppendJSON(nil)); got != want {
		t.Errorf("AppendJSON:\n got %s\nwant %s", got, want)
	}
	// A previous batch that was never seen has no verdict to state.
	d.Previous = &replay.PreviousBatch{Batch: "p/2026-09-29/0"}
	if got := string(d.AppendJSON(nil)); !strings.Contains(got, `"previous":{"batch":"p/2026-09-29/0","seen":false,"delivered":false}`) {
		t.Errorf("unseen previous batch: %s", got)
	}
}

// normalize makes times comparable after a round trip (locations differ)
// and empty slices equal to decoded empty slices.
func normalize(d replay.Diagnosis) replay.Diagnosis {
	fix := func(t time.Time) time.Time {
		if t.Year() == 1 {
			return time.Time{}
		}
		return t.UTC()
	}
	d.AsOf, d.FirstEventAt, d.LastEventAt = fix(d.AsOf), fix(d.FirstEventAt), fix(d.LastEventAt)
	bs := append([]replay.BoundaryState(nil), d.Boundaries...)
	for i := range bs {
		bs[i].At, bs[i].Due = fix(bs[i].At), fix(bs[i].Due)
	}
	d.Boundaries = bs
	d.Zone = nil // text only: JSON keeps times in UTC
	return d
}

// TestAppendTimeMatchesTimeFormat checks the fast formatter against the
// standard library over a wide range of instants.
func TestAppendTimeMatchesTimeFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	lo := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()
	check := func(ms int64) {
		tm := time.UnixMilli(ms).UTC()
		d := replay.Diagnosis{AsOf: tm}
		b := d.AppendJSON(nil)
		want := `"as_of":"` + tm.Format(model.TimeLayout) + `"`
		if !bytes.Contains(b, []byte(want)) {
			t.Fatalf("%d: want %s in %s", ms, want, b)
		}
	}
	for _, ms := range []int64{0, -1, 86399999, 951782400000, 4107542400000, lo + 86400000, hi} {
		check(ms)
	}
	for i := 0; i < 100000; i++ {
		check(lo + r.Int64N(hi-lo))
	}
}

package replay_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/report"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

var update = flag.Bool("update", false, "rewrite golden files")

// A scenario lives in testdata/scenarios/NAME:
//
//	scenario.md     one paragraph: what the scenario shows
//	events.jsonl    wire-format v1 events, one per line
//	contract.yaml   the pipeline's contract (optional: default contract)
//	as_of           the evaluation time, one RFC 3339 line
//	diagnosis.json  golden: report.JSON of every batch's diagnosis
//	report.txt      golden: report.TextAll of the same diagnoses
const goldenDir = "testdata/scenarios"

// goldenWant is what the rules of docs/diagnosis.md say of one batch of a
// scenario. The goldens hold every detail; this table holds the verdicts a
// reviewer checked against the rules, so that "go test -update" cannot quietly accept a regression
// in what matters most.
type goldenWant struct {
	batch        string
	status       replay.Status
	verdict      string
	firstMissing string
	anomalies    []replay.AnomalyKind // kinds, in the diagnosis' order
	action       string               // next step action
}

const (
	goldenSeedPipe = "account-balance-snapshot.daily"
	goldenGL       = "gl-balance.daily/2026-09-30/20260930"
)

var goldenScenarios = map[string][]goldenWant{
	"seed": {
		{goldenSeedPipe + "/2026-09-29/20260929", replay.StatusDelivered, "delivered", "", nil, "none"},
		{goldenSeedPipe + "/2026-09-30/20260930", replay.StatusLate, "not_identified", "signal_delivered", anomalyKinds(replay.Late), "restore_signal"},
	},
	"seed-default": {
		{goldenSeedPipe + "/2026-09-29/20260929", replay.StatusDelivered, "delivered", "", nil, "none"},
		{goldenSeedPipe + "/2026-09-30/20260930", replay.StatusLate, "not_identified", "signal_delivered", anomalyKinds(replay.Late), "restore_signal"},
	},
	"verdict-not-produced": {
		{goldenGL, replay.StatusLate, "not_produced", "produced", anomalyKinds(replay.Late), "investigate_producer"},
	},
	"verdict-not-final": {
		{goldenGL, replay.StatusInProgress, "not_final", "finalized", nil, "wait"},
	},
	"verdict-not-transferred": {
		{goldenGL, replay.StatusLate, "not_transferred", "transferred", anomalyKinds(replay.Late), "transfer_artifact"},
	},
	"verdict-not-identified": {
		{goldenGL, replay.StatusLate, "not_identified", "signaled", anomalyKinds(replay.Late), "restore_signal"},
	},
	"verdict-not-consumed": {
		{goldenGL, replay.StatusLate, "not_consumed", "consumed", anomalyKinds(replay.Late), "investigate_consumer"},
	},
	"verdict-delivered": {
		{goldenGL, replay.StatusDelivered, "delivered", "", nil, "none"},
	},
	"anomaly-identity-mismatch": {
		{goldenGL, replay.StatusBroken, "not_identified", "signal_delivered", anomalyKinds(replay.IdentityMismatch, replay.Late), "restore_signal"},
	},
	"anomaly-row-mismatch": {
		{goldenGL, replay.StatusBroken, "delivered", "", anomalyKinds(replay.RowMismatch), "resolve_anomaly"},
	},
	"anomaly-row-minimum": {
		{goldenGL, replay.StatusBroken, "not_transferred", "transferred", anomalyKinds(replay.RowMismatch), "resolve_anomaly"},
	},
	"anomaly-checksum-mismatch": {
		{goldenGL, replay.StatusBroken, "delivered", "", anomalyKinds(replay.ChecksumMismatch), "resolve_anomaly"},
	},
	"anomaly-signal-before-final": {
		{goldenGL, replay.StatusBroken, "not_transferred", "transferred", anomalyKinds(replay.SignalBeforeFinal), "resolve_anomaly"},
	},
	"anomaly-duplicate-consumption": {
		{goldenGL, replay.StatusBroken, "delivered", "", anomalyKinds(replay.DuplicateConsumption), "resolve_anomaly"},
	},
	"anomaly-orphan-consumption": {
		{goldenGL, replay.StatusBroken, "delivered", "produced", anomalyKinds(replay.OrphanConsumption), "resolve_anomaly"},
	},
	"anomaly-continuity-gap": {
		{"gl-balance.daily/2026-09-28/20260928", replay.StatusDelivered, "delivered", "", nil, "none"},
		// The gap itself: expected, no event, its deadlines passed.
		{"gl-balance.daily/2026-09-29/20260929", replay.StatusLate, "not_produced", "produced", anomalyKinds(replay.Late), "investigate_producer"},
		{goldenGL, replay.StatusDelivered, "delivered", "", anomalyKinds(replay.ContinuityGap), "check_previous_batch"},
	},
	"anomaly-success-without-artifact": {
		{goldenGL, replay.StatusBroken, "not_final", "finalized", anomalyKinds(replay.SuccessWithoutArtifact, replay.Late), "resolve_anomaly"},
	},
	"anomaly-late": {
		{goldenGL, replay.StatusDelivered, "delivered", "", anomalyKinds(replay.Late, replay.Late), "none"},
	},
	"status-broken": {
		{goldenGL, replay.StatusBroken, "not_identified", "signal_delivered", anomalyKinds(replay.ChecksumMismatch, replay.Late), "restore_signal"},
	},
	"status-delivered": {
		{goldenGL, replay.StatusDelivered, "delivered", "", nil, "none"},
	},
	"status-failed-job": {
		{goldenGL, replay.StatusFailed, "not_produced", "produced", anomalyKinds(replay.Late), "investigate_producer"},
	},
	"status-failed-consume": {
		{goldenGL, replay.StatusFailed, "not_consumed", "consumed", nil, "investigate_consumer"},
	},
	"status-late": {
		{goldenGL, replay.StatusLate, "not_produced", "produced", anomalyKinds(replay.Late), "investigate_producer"},
	},
	"status-in-progress": {
		{goldenGL, replay.StatusInProgress, "not_identified", "signal_delivered", nil, "wait"},
	},
	"contract-no-exchange": {
		{goldenGL, replay.StatusLate, "not_identified", "identified", anomalyKinds(replay.Late), "investigate_identification"},
	},
	"rerun-seed": {
		{goldenSeedPipe + "/2026-09-29/20260929", replay.StatusDelivered, "delivered", "", nil, "none"},
		{goldenSeedPipe + "/2026-09-30/20260930", replay.StatusFailed, "not_produced", "produced", anomalyKinds(replay.Late), "none"},
		{goldenSeedPipe + "/2026-09-30/20260930-r2", replay.StatusDelivered, "delivered", "", nil, "none"},
		{goldenSeedPipe + "/2026-10-01/20261001", replay.StatusDelivered, "delivered", "", nil, "none"},
	},
	"rerun-undeclared": {
		{goldenSeedPipe + "/2026-09-29/20260929", replay.StatusDelivered, "delivered", "", nil, "none"},
		{goldenSeedPipe + "/2026-09-30/20260930", replay.StatusFailed, "not_produced", "produced", anomalyKinds(replay.Late), "investigate_producer"},
		{goldenSeedPipe + "/2026-09-30/20260930-fix", replay.StatusBroken, "delivered", "", anomalyKinds(replay.IdentityMismatch, replay.IdentityMismatch, replay.IdentityMismatch), "resolve_anomaly"},
		{goldenSeedPipe + "/2026-10-01/20261001", replay.StatusDelivered, "delivered", "", anomalyKinds(replay.ContinuityGap), "check_previous_batch"},
	},
	"out-of-order": {
		{goldenGL, replay.StatusLate, "not_consumed", "signaled", anomalyKinds(replay.Late), "investigate_consumer"},
	},
}

func anomalyKinds(ks ...replay.AnomalyKind) []replay.AnomalyKind { return ks }

// loadGoldenScenario reads a scenario's events, contracts and as-of time.
func loadGoldenScenario(t *testing.T, dir string) ([]model.Event, *contract.Set, time.Time) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "as_of"))
	if err != nil {
		t.Fatal(err)
	}
	asOf, err := time.Parse(time.RFC3339, strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("as_of: %v", err)
	}
	var set *contract.Set // nil: every pipeline gets the default contract
	if _, err := os.Stat(filepath.Join(dir, "contract.yaml")); err == nil {
		set, err = contract.LoadFS(os.DirFS(dir), "contract.yaml")
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []model.Event
	var dec model.Decoder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		e, err := dec.Decode(sc.Bytes())
		if err != nil {
			// A scenario must not test the decoder's tolerance by accident.
			t.Fatalf("events.jsonl:%d: %v", n, err)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("events.jsonl: no events")
	}
	return events, set, asOf
}

// diagnoseAll replays events the way handoff diagnose does: grouped by batch,
// with continuity and heartbeats, sorted by batch key. A scenario is about
// the batches it holds: its history covers its own dates, so the absent
// expected batches of the days after them (analyzer/batches tests those)
// are not reported.
func diagnoseAll(events []model.Event, set *contract.Set, asOf time.Time) []replay.Diagnosis {
	s := batches.New(set, asOf)
	var last model.Date
	for i := range events {
		if events[i].Type.HasBatch() && events[i].BusinessDate.Compare(last) > 0 {
			last = events[i].BusinessDate
		}
	}
	s.Covers(model.Date{}, last)
	for i := range events {
		s.Add(&events[i])
	}
	return s.Diagnose(nil)
}

func TestGolden(t *testing.T) {
	dirs, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, de := range dirs {
		if !de.IsDir() {
			continue
		}
		name := de.Name()
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(goldenDir, name)
			if _, err := os.Stat(filepath.Join(dir, "scenario.md")); err != nil {
				t.Errorf("scenario.md: %v (every scenario says what it shows)", err)
			}
			events, set, asOf := loadGoldenScenario(t, dir)
			ds := diagnoseAll(events, set, asOf)

			ws, ok := goldenScenarios[name]
			if !ok {
				t.Fatalf("scenario %s has no expectations in the goldenScenarios table", name)
			}
			checkGoldenWants(t, ds, ws)

			var js, txt bytes.Buffer
			if err := report.JSON(&js, ds); err != nil {
				t.Fatal(err)
			}
			if err := report.TextAll(&txt, ds); err != nil {
				t.Fatal(err)
			}
			// The golden is indented so that a change reads as a small diff.
			var indented bytes.Buffer
			if err := json.Indent(&indented, js.Bytes(), "", "  "); err != nil {
				t.Fatalf("report.JSON wrote invalid JSON: %v", err)
			}
			compareGolden(t, filepath.Join(dir, "diagnosis.json"), indented.Bytes())
			compareGolden(t, filepath.Join(dir, "report.txt"), txt.Bytes())

			// Replay is a pure function of the events (docs/diagnosis.md):
			// reversed arrival and redelivery must not change a byte.
			again := slices.Clone(events)
			slices.Reverse(again)
			again = append(again, events...)
			var js2 bytes.Buffer
			if err := report.JSON(&js2, diagnoseAll(again, set, asOf)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(js.Bytes(), js2.Bytes()) {
				t.Errorf("reversed and duplicated events give another diagnosis:\n%s", goldenDiff(js.String(), js2.String()))
			}
		})
	}
	for name := range goldenScenarios {
		if !seen[name] {
			t.Errorf("scenario %s is in the table but not in %s", name, goldenDir)
		}
	}
}

func checkGoldenWants(t *testing.T, ds []replay.Diagnosis, ws []goldenWant) {
	t.Helper()
	if len(ds) != len(ws) {
		var got []string
		for _, d := range ds {
			got = append(got, d.Batch)
		}
		t.Fatalf("got %d batches %v, want %d", len(ds), got, len(ws))
	}
	for i, w := range ws {
		d := ds[i]
		var ks []replay.AnomalyKind
		for _, a := range d.Anomalies {
			ks = append(ks, a.Kind)
		}
		got := goldenWant{d.Batch, d.Status, d.Verdict.String(), d.FirstMissing, ks, string(d.NextStep.Action)}
		if got.batch != w.batch || got.status != w.status || got.verdict != w.verdict ||
			got.firstMissing != w.firstMissing || !slices.Equal(got.anomalies, w.anomalies) || got.action != w.action {
			t.Errorf("batch %d:\n got %+v\nwant %+v", i, got, w)
		}
		checkDesignInvariants(t, &d)
	}
}

// checkDesignInvariants asserts what docs/diagnosis.md says of every diagnosis,
// whatever the scenario.
func checkDesignInvariants(t *testing.T, d *replay.Diagnosis) {
	t.Helper()
	if len(d.Hypotheses) != len(model.Hypotheses) {
		t.Errorf("%s: %d hypotheses, want one verdict for each of %d", d.Batch, len(d.Hypotheses), len(model.Hypotheses))
	}
	supported := 0
	for _, h := range d.Hypotheses {
		if h.Support == replay.Supported {
			supported++
			if h.Name != d.Verdict {
				t.Errorf("%s: supported hypothesis %s is not the verdict %s", d.Batch, h.Name, d.Verdict)
			}
		}
		if h.Support == replay.Excluded && len(h.Evidence) == 0 && !strings.Contains(h.Reason, "does not require") {
			t.Errorf("%s: %s excluded without evidence", d.Batch, h.Name)
		}
	}
	if (supported == 1) == d.Delivered() {
		t.Errorf("%s: %d supported hypotheses with verdict %s", d.Batch, supported, d.Verdict)
	}
	for _, s := range replay.Narrate(d) {
		for _, f := range s.Facts {
			if strings.Contains(strings.ToLower(f.Text), "consumer ok") {
				t.Errorf("%s: %q: absence of a failure is not evidence of health", d.Batch, f.Text)
			}
		}
	}
}

// compareGolden compares got with the golden file, or rewrites it under -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./analyzer/replay -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended):\n%s", path, goldenDiff(string(want), string(got)))
	}
}

// goldenDiff shows the first differing line of two texts, with a little
// context: enough to see what changed without dumping whole goldens.
func goldenDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + w + "\n  got: " + g
		}
	}
	return "(no line differs: trailing bytes)"
}

// TestGoldenSeedIsTheDemo keeps the seed scenarios honest: they are copies
// of the demo's events and contract, and a golden of a stale copy would
// vouch for a story the demo no longer tells.
func TestGoldenSeedIsTheDemo(t *testing.T) {
	copies := []struct{ copy, original string }{
		{"seed/events.jsonl", "../../deploy/demo/seed-case.jsonl"},
		{"seed-default/events.jsonl", "../../deploy/demo/seed-case.jsonl"},
		{"seed/contract.yaml", "../../deploy/contracts/account-balance-snapshot.daily.yaml"},
	}
	for _, c := range copies {
		got, err := os.ReadFile(filepath.Join(goldenDir, c.copy))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(c.original)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not a copy of %s: copy it again and rerun with -update", c.copy, c.original)
		}
	}
	if _, err := os.Stat(filepath.Join(goldenDir, "seed-default", "contract.yaml")); err == nil {
		t.Error("seed-default must run without a contract")
	}
}

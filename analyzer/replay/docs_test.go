package replay_test

import (
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// TestDocumentedNamesMatchConstants keeps the lists of names that users read
// in docs/ equal to the constants the replay writes: a new action or state
// without its documentation (or a documented one that no longer exists)
// fails here, not in a user's alerting rule.
func TestDocumentedNamesMatchConstants(t *testing.T) {
	diagnosis := readDoc(t, "../../docs/diagnosis.md")
	diagnose := readDoc(t, "../../docs/diagnose.md")

	// docs/diagnosis.md: the first column of the "Next step" table, and the
	// states of the restore_signal checks.
	nextStep := section(t, diagnosis, "## Next step")
	var tableActions []string
	for _, line := range strings.Split(nextStep, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.Trim(cells[1], " -") == "" || strings.TrimSpace(cells[1]) == "action" {
			continue
		}
		tableActions = append(tableActions, backticked(cells[1])...)
	}
	var tableKinds []string
	for _, line := range strings.Split(section(t, diagnosis, "## Anomalies"), "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 {
			tableKinds = append(tableKinds, backticked(cells[1])...)
		}
	}
	var statusList []string
	for _, line := range strings.Split(section(t, diagnosis, "## Status (first that applies)"), "\n") {
		if m := regexp.MustCompile("^[0-9]+\\. `([a-z_]+)`").FindStringSubmatch(line); m != nil {
			statusList = append(statusList, m[1])
		}
	}
	tests := []struct {
		where string
		got   []string
		want  []string
	}{
		{"docs/diagnosis.md, Next step table", tableActions, names(replay.Actions[:])},
		{"docs/diagnosis.md, restore_signal check states", backticked(match(t, diagnosis, "as (`[^\n]*`) with evidence")), names(replay.CheckStates[:])},
		{"docs/diagnose.md, next_step action", backticked(match(t, diagnose, "`action` is one of ([^;]*);")), names(replay.Actions[:])},
		{"docs/diagnose.md, checks state", strings.Split(match(t, diagnose, `state: ([a-z_\\|]+),`), `\|`), names(replay.CheckStates[:])},
		{"docs/diagnosis.md, Anomalies table", tableKinds, names(replay.AnomalyKinds[:])},
		{"docs/diagnosis.md, Status list", statusList, names(replay.Statuses[:])},
		{"docs/diagnose.md, anomalies kinds", backticked(match(t, diagnose, "kinds: ([^|]*)\\|")), names(replay.AnomalyKinds[:])},
		{"docs/diagnose.md, status", backticked(match(t, diagnose, "\\| `status` \\| ([^:]*):")), names(replay.Statuses[:])},
		{"docs/diagnose.md, hypotheses verdict", strings.Split(match(t, diagnose, `verdict: ([a-z_\\|]+),`), `\|`), names(replay.Supports[:])},
	}
	for _, tt := range tests {
		got, want := slices.Sorted(slices.Values(tt.got)), slices.Sorted(slices.Values(tt.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s lists %q; the constants are %q", tt.where, got, want)
		}
	}
}

// TestWrittenNamesAreListed guards the lists the documentation test relies
// on: every action, check state, support, status and anomaly kind a replay
// writes is in its list, and no list repeats a name.
func TestWrittenNamesAreListed(t *testing.T) {
	lists := map[string][]string{
		"Actions": names(replay.Actions[:]), "CheckStates": names(replay.CheckStates[:]), "Supports": names(replay.Supports[:]),
		"Statuses": names(replay.Statuses[:]), "AnomalyKinds": names(replay.AnomalyKinds[:]),
	}
	for what, l := range lists {
		if len(slices.Compact(slices.Sorted(slices.Values(l)))) != len(l) {
			t.Errorf("%s has a repeated name: %q", what, l)
		}
	}
	seen := map[string]map[string]bool{"Actions": {}, "CheckStates": {}, "Supports": {}, "Statuses": {}, "AnomalyKinds": {}}
	c := seedContract()
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 13))
		date := model.Date{Year: 2026, Month: 9, Day: 1 + int(seed%28)}
		for _, off := range []time.Duration{18 * time.Hour, 72 * time.Hour} {
			d := replay.Replay(randomBatch(r, "p", date), c, date.In(time.UTC).Add(off), replay.Context{})
			seen["Actions"][string(d.NextStep.Action)] = true
			seen["Statuses"][string(d.Status)] = true
			for _, a := range d.Anomalies {
				seen["AnomalyKinds"][string(a.Kind)] = true
			}
			for _, ch := range d.NextStep.Checks {
				seen["CheckStates"][string(ch.State)] = true
			}
			for _, h := range d.Hypotheses {
				seen["Supports"][string(h.Support)] = true
			}
		}
	}
	for what, names := range seen {
		for n := range names {
			if !slices.Contains(lists[what], n) {
				t.Errorf("a replay wrote %q, which %s does not list", n, what)
			}
		}
	}
	// The generator must reach more than the trivial cases for the check
	// above to mean anything.
	if len(seen["Actions"]) < 5 || len(seen["CheckStates"]) < 2 || len(seen["Supports"]) != 3 ||
		len(seen["Statuses"]) < 4 || len(seen["AnomalyKinds"]) < 4 {
		t.Errorf("random batches reached too few names to check: %v", seen)
	}
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the documentation the constants are pinned to: %v", err)
	}
	return string(b)
}

// section returns the text from heading to the next heading of its level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("no %q section", heading)
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func match(t *testing.T, doc, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("the documentation no longer matches %q: where did the list go?", pattern)
	}
	return m[1]
}

var backtickRE = regexp.MustCompile("`([a-z_]+)`")

func backticked(s string) []string {
	var out []string
	for _, m := range backtickRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func names[S ~string](l []S) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = string(s)
	}
	return out
}

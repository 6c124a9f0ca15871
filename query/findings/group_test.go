package findings_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/findings"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// groupFixture is a morning's findings: two teams, three pipelines, one
// without an owner, open and resolved, of several kinds, as of 09:00.
func groupFixture() (findings.Result, time.Time) {
	d := model.MustParseDate("2026-09-30")
	at := func(s string) time.Time { return time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).Add(mustDur(s)) }
	f := func(pipeline, owner, id string, kind detect.Kind, state detect.State, raised, deadline string) detect.Finding {
		x := detect.Finding{
			Fingerprint: pipeline + id + string(kind), Batch: model.BatchKey{Pipeline: pipeline, BusinessDate: d, BatchID: id},
			Kind: kind, State: state, Owner: owner, RaisedAt: at(raised), EvidenceAsOf: at(raised),
		}
		if deadline != "" {
			x.Deadline = at(deadline)
		}
		if state == detect.Resolved {
			x.ResolvedAt, x.Lateness = at(raised).Add(time.Hour), 20*time.Minute
		}
		return x
	}
	return findings.Result{Findings: []detect.Finding{
		f("account-balance-snapshot.daily", "treasury-data", "20260930", detect.Overdue, detect.Open, "1h", "30m"),
		f("risk-report.daily", "risk", "20260930", detect.Missing, detect.Open, "3h", "2h"),
		f("risk-report.daily", "risk", "20260930b", detect.Missing, detect.Open, "4h", "2h"),
		f("regulatory-extract.daily", "risk", "20260930", detect.Missing, detect.Open, "5h", "4h"),
		f("regulatory-extract.daily", "risk", "20260930", "row_mismatch", detect.Open, "6h", ""),
		f("fx-rates.hourly", "", "2026093006", detect.Failed, detect.Open, "7h", ""),
		f("account-balance-snapshot.daily", "treasury-data", "20260929", detect.Overdue, detect.Resolved, "2h", "1h"),
	}}, at("9h")
}

func mustDur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestGroupsGolden: the grouped summary by pipeline and by owner, text
// (open findings, and both states) and JSON, against testdata/.
func TestGroupsGolden(t *testing.T) {
	res, asOf := groupFixture()
	var open findings.Result
	for _, f := range res.Findings {
		if f.State == detect.Open {
			open.Findings = append(open.Findings, f)
		}
	}
	for _, tt := range []struct {
		name  string
		res   findings.Result
		by    findings.GroupBy
		state string
		json  bool
	}{
		{"groups-pipeline.txt", open, findings.GroupPipeline, "open", false},
		{"groups-owner.txt", open, findings.GroupOwner, "open", false},
		{"groups-owner-all.txt", res, findings.GroupOwner, "", false},
		{"groups-pipeline.json", open, findings.GroupPipeline, "open", true},
		{"groups-owner-all.json", res, findings.GroupOwner, "", true},
		{"groups-none.txt", findings.Result{}, findings.GroupPipeline, "open", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			var err error
			if tt.json {
				err = findings.WriteGroupsJSON(&b, tt.res, tt.by, asOf)
			} else {
				err = findings.WriteGroupsText(&b, tt.res, tt.by, tt.state, asOf)
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.json {
				var doc map[string]any
				if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, b.Bytes())
				}
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

// TestGroups checks the figures a person acts on, independently of the
// layout: per owner the open count, the kinds, the oldest raised and the
// worst lateness with its batch; the group with most open findings first;
// a finding without an owner in a group of its own.
func TestGroups(t *testing.T) {
	res, asOf := groupFixture()
	gs := findings.Groups(res, findings.GroupOwner, asOf)
	if len(gs) != 3 {
		t.Fatalf("%d owner groups, want 3 (risk, treasury-data, none): %+v", len(gs), gs)
	}
	risk := gs[0]
	if risk.Key != "risk" || risk.Open != 4 || risk.Kinds["missing"] != 3 || risk.Kinds["row_mismatch"] != 1 {
		t.Errorf("first group %+v, want risk with 4 open: 3 missing, 1 row_mismatch", risk)
	}
	if want := asOf.Add(-6 * time.Hour); !risk.Oldest.Equal(want) {
		t.Errorf("risk oldest %s, want %s (raised 03:00)", risk.Oldest, want)
	}
	if risk.Worst != 7*time.Hour || risk.WorstBatch != "risk-report.daily/2026-09-30/20260930" {
		t.Errorf("risk worst %v of %s, want 7h of risk-report.daily/2026-09-30/20260930 (due 02:00, as of 09:00; the first of two as late)", risk.Worst, risk.WorstBatch)
	}
	if gs[1].Key != "treasury-data" || gs[1].Open != 1 || gs[1].Findings != 2 {
		t.Errorf("second group %+v, want treasury-data, 1 open of 2", gs[1])
	}
	if gs[2].Key != "" || gs[2].Worst != 0 || gs[2].WorstBatch != "" {
		t.Errorf("third group %+v, want no owner, not late (a failed finding has no deadline)", gs[2])
	}
	byPipeline := findings.Groups(res, findings.GroupPipeline, asOf)
	if len(byPipeline) != 4 || byPipeline[0].Key != "regulatory-extract.daily" && byPipeline[0].Key != "risk-report.daily" {
		t.Errorf("pipeline groups %+v", byPipeline)
	}
}

// TestGroupByUsage: --group-by takes the groupings there are, and not
// with jsonl; each refusal names the flag.
func TestGroupByUsage(t *testing.T) {
	for _, tt := range []struct{ by, format, want string }{
		{"pipeline", "text", ""},
		{"owner", "json", ""},
		{"team", "text", `--group-by "team": want owner or pipeline`},
		{"owner", "jsonl", "--group-by with --format jsonl"},
	} {
		c := findings.Command{State: "open", Limit: "10", Format: tt.format, GroupBy: tt.by}
		err := c.Prepare()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("--group-by %s --format %s: %v, want %q", tt.by, tt.format, err, tt.want)
		}
	}
}

package serve_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// row returns the table row of finding fp in the table with id table of
// page, "" when there is none.
func row(page, table, fp string) string {
	i := strings.Index(page, `<table id="`+table+`"`)
	if i < 0 {
		return ""
	}
	t := page[i:]
	t = t[:strings.Index(t, "</table>")]
	j := strings.Index(t, `<tr data-fingerprint="`+fp+`"`)
	if j < 0 {
		return ""
	}
	r := t[j:]
	return r[:strings.Index(r, "</tr>")]
}

// TestFindingLifecycleOnPages: the batch page lists the findings of its
// date with how each ended (a first attempt superseded by its re-run, a
// boundary on time but reported late, with its delay), the findings page
// shows the same, and the API carries the record's fields.
func TestFindingLifecycleOnPages(t *testing.T) {
	f := newFixture(t)
	key, err := model.ParseBatchKey(seedBatch)
	if err != nil {
		t.Fatal(err)
	}
	rerun := key
	rerun.BatchID += "-r2"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := f.sink
	var rows schema.FindingRows
	raised := time.Date(2026, 9, 30, 21, 10, 0, 0, time.UTC).UnixMilli()
	rows.Add(schema.FindingRow{Key: key, Fingerprint: "fp-first", Seq: 2, State: "resolved", Kind: "failed", Name: "produced",
		RaisedMS: raised, ResolvedMS: raised + 3_600_000, EvidenceAsOfMS: raised + 3_600_000, Severity: "warning", Status: "failed",
		Verdict: "not_produced", FirstMissing: "produced", Diagnosis: "{}",
		Resolution: "superseded by " + rerun.String(), SupersededBy: rerun.String()}, schema.Source{Topic: "t", Offset: 9}, 1)
	if err := s.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}

	code, body := f.get(t, "/batches/"+seedBatch)
	if code != 200 {
		t.Fatalf("batch page: %d\n%s", code, body)
	}
	page := string(body)
	for _, tt := range []struct{ table, fp, want string }{
		{"batch-findings", "fp-first", `<td class="resolution" title="superseded by ` + rerun.String() + `">superseded by 20260930-r2</td>`},
		{"batch-findings", "fp-done", `<td class="resolution" data-reporting-delay="3m" title="on time (signal_delivered at 2026-09-30T21:58:00Z, ` +
			`deadline 2026-09-30T22:00:00Z), reported late by 3m">on time, reported late by 3m</td>`},
		{"batch-findings", "fp-done", `<td class="lateness"></td>`},
		{"batch-findings", "fp-seed", `<td class="resolution"></td>`},
		{"batch-findings", "fp-seed", `<td class="lateness">2d`},
	} {
		if r := row(page, tt.table, tt.fp); !strings.Contains(r, tt.want) {
			t.Errorf("batch page, %s row %s: %q lacks %q", tt.table, tt.fp, r, tt.want)
		}
	}
	if _, other := f.get(t, "/batches/"+storedPipeline+"/2026-10-01/20261001"); strings.Contains(string(other), "batch-findings") {
		t.Error("the page of a batch whose date has no finding lists findings")
	}

	_, body = f.get(t, "/findings")
	for fp, want := range map[string]string{
		"fp-first": "superseded by 20260930-r2",
		"fp-done":  `reported late by 3m">on time, reported late by 3m`,
	} {
		if r := row(string(body), "findings", fp); !strings.Contains(r, want) {
			t.Errorf("findings page, row %s: %q lacks %q", fp, r, want)
		}
	}

	var l struct {
		Findings []struct {
			Fingerprint  string `json:"fingerprint"`
			Delay        int64  `json:"reporting_delay_ms"`
			Resolution   string `json:"resolution"`
			SupersededBy string `json:"superseded_by"`
		} `json:"findings"`
	}
	f.getJSON(t, "/api/v1/findings", 200, &l)
	seen := 0
	for _, g := range l.Findings {
		switch g.Fingerprint {
		case "fp-first":
			seen++
			if g.SupersededBy != rerun.String() || g.Resolution != "superseded by "+rerun.String() || g.Delay != 0 {
				t.Errorf("API fp-first: %+v, want superseded by %s", g, rerun)
			}
		case "fp-done":
			seen++
			if g.Delay != 180_000 || !strings.HasSuffix(g.Resolution, "reported late by 3m") || g.SupersededBy != "" {
				t.Errorf("API fp-done: %+v, want a reporting delay of 180000 ms", g)
			}
		}
	}
	if seen != 2 {
		t.Errorf("API: %d of fp-first and fp-done listed, want both", seen)
	}
}

package serve_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// The grid marks a batch with an open early warning (kind unusual) and
// its legend says what the mark means; a resolved one leaves no mark.
func TestGridMarksUnusual(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := writer.New(f.raw, f.db)
	if err != nil {
		t.Fatal(err)
	}
	open := model.BatchKey{Pipeline: seedPipeline, BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	done := model.BatchKey{Pipeline: seedPipeline, BusinessDate: model.MustParseDate("2026-09-29"), BatchID: "20260929"}
	ms := func(s string) int64 { t, _ := time.Parse(time.RFC3339, s); return t.UnixMilli() }
	var rows schema.FindingRows
	for i, r := range []struct {
		key      model.BatchKey
		state    string
		resolved int64
	}{{open, "open", 0}, {done, "resolved", ms("2026-09-29T18:00:00Z")}} {
		rows.Add(schema.FindingRow{Key: r.key, Fingerprint: "fp-unusual-" + r.state, Seq: 1, State: r.state, Kind: "unusual", Name: "produced",
			RaisedMS: ms("2026-09-29T17:35:00Z"), ResolvedMS: r.resolved, DeadlineMS: ms("2026-09-29T17:35:00Z"),
			Severity: "info", EvidenceAsOfMS: ms("2026-09-29T17:35:00Z"), Status: "in_progress", Verdict: "not_produced",
			FirstMissing: "produced", Diagnosis: "{}"}, schema.Source{Topic: "u", Partition: 0, Offset: int64(i)}, ms("2026-10-01T00:00:00Z"))
	}
	if err := s.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}
	code, body := f.get(t, "/?pipeline="+seedPipeline+"&from=2026-09-28&to=2026-10-01")
	page := string(body)
	if code != 200 {
		t.Fatalf("grid: %d %s", code, body)
	}
	cell := func(k model.BatchKey) string {
		i := strings.Index(page, `/batches/`+k.Pipeline+`/`+k.BusinessDate.String()+`/`+k.BatchID+`"`)
		if i < 0 {
			t.Fatalf("no cell of %s in the grid:\n%s", k, page)
		}
		start := strings.LastIndex(page[:i], "<a")
		end := strings.Index(page[i:], "</a>")
		return page[start : i+end]
	}
	if c := cell(open); !strings.Contains(c, "unusual") || !strings.Contains(c, "!") || !strings.Contains(c, "early warning: produced") {
		t.Errorf("the batch with an open early warning is not marked: %s", c)
	}
	if c := cell(done); strings.Contains(c, "unusual") {
		t.Errorf("a resolved early warning left a mark: %s", c)
	}
	if !strings.Contains(page, `<span class="unusual">!</span> after the letter = an early warning is open`) {
		t.Errorf("the legend does not explain the mark")
	}
}

package contract_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// TestExampleContracts loads the hourly and cron examples shipped in
// deploy/contracts and checks the calendar and deadlines docs/contracts.md
// describes for them.
func TestExampleContracts(t *testing.T) {
	set, err := contract.LoadFS(os.DirFS("../../deploy"), "contracts")
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	d := model.MustParseDate
	key := func(p, date, id string) model.BatchKey {
		return model.BatchKey{Pipeline: p, BusinessDate: d(date), BatchID: id}
	}
	none := func(model.Boundary) (time.Time, bool) { return time.Time{}, false }

	fx := set.For("fx-rates.hourly")
	if fx.IsDefault() || fx.Schedule != contract.Hourly || fx.Severity != contract.SeverityCritical || fx.Labels["team"] != "treasury" {
		t.Fatalf("fx-rates.hourly: %+v", fx)
	}
	if n := len(fx.Expected(d("2026-12-24"), d("2026-12-27"))); n != 48 {
		t.Errorf("fx-rates.hourly: %d batches over 24-27 December, want 48 (Christmas is a holiday)", n)
	}
	k := key("fx-rates.hourly", "2026-09-30", "2026093007")
	if name, _ := fx.ArtifactName(k); name != "fx_rates_20260930_0700.csv" {
		t.Errorf("fx-rates.hourly artifact %q", name)
	}
	due, ok := fx.Dues(k, none, time.Time{})
	// 07:00 in London in summer time is 06:00Z.
	if want := time.Date(2026, 9, 30, 6, 20, 0, 0, time.UTC); !ok[model.Produced] || !due[model.Produced].Equal(want) {
		t.Errorf("fx-rates.hourly produced due %v, want %v", due[model.Produced], want)
	}
	if prev, ok := fx.Previous(key("fx-rates.hourly", "2026-12-27", "2026122700")); !ok || prev != key("fx-rates.hourly", "2026-12-24", "2026122423") {
		t.Errorf("fx-rates.hourly: previous of the first batch after Christmas = %v, %v", prev, ok)
	}

	gl := set.For("gl-postings.close")
	if gl.IsDefault() || gl.Owner != "finance-platform" {
		t.Fatalf("gl-postings.close: %+v", gl)
	}
	// National Day week: 1, 2, 5, 6 and 7 October are holidays, 3 and 4 a
	// weekend; the close of 30 September is followed by that of the 8th.
	got := gl.Expected(d("2026-09-30"), d("2026-10-08"))
	if len(got) != 2 || got[0] != key("gl-postings.close", "2026-09-30", "20260930") || got[1] != key("gl-postings.close", "2026-10-08", "20261008") {
		t.Errorf("gl-postings.close: Expected %v", got)
	}
	if prev, ok := gl.Previous(got[1]); !ok || prev != got[0] {
		t.Errorf("gl-postings.close: Previous(%v) = %v, %v", got[1], prev, ok)
	}
	if name, _ := gl.ArtifactName(got[0]); name != "gl_postings_20260930_1830.parquet" {
		t.Errorf("gl-postings.close artifact %q", name)
	}
	due, ok = gl.Dues(got[0], none, time.Time{})
	// 18:30 Shanghai is 10:30Z; produced is due an hour later.
	if want := time.Date(2026, 9, 30, 11, 30, 0, 0, time.UTC); !ok[model.Produced] || !due[model.Produced].Equal(want) {
		t.Errorf("gl-postings.close produced due %v, want %v", due[model.Produced], want)
	}
}

// TestDocExamples parses every YAML example of docs/contracts.md that names
// a pipeline, so the documentation cannot drift from the parser. Holiday
// files resolve against deploy/contracts.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/contracts.md")
	if err != nil {
		t.Fatal(err)
	}
	holidays, err := os.ReadFile("../../deploy/contracts/holidays/cn-2026.txt")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	n := 0
	for i, b := range blocks {
		if !strings.HasPrefix(string(b[1]), "pipeline:") {
			continue
		}
		n++
		fsys := fstest.MapFS{
			"contracts/doc.yaml":             {Data: b[1]},
			"contracts/holidays/cn-2026.txt": {Data: holidays},
		}
		if _, err := contract.LoadFS(fsys, "contracts/doc.yaml"); err != nil {
			t.Errorf("docs/contracts.md example %d:\n%s\n%v", i+1, b[1], err)
		}
	}
	if n < 4 {
		t.Errorf("found %d contract examples in docs/contracts.md, want at least 4", n)
	}
}

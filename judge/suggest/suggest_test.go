package suggest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/model"
)

// The file source keeps the pipelines the patterns select and the dates
// in range, and counts the lines that are not events.
func TestFileFeedSelects(t *testing.T) {
	line := func(p, d string) string {
		return `{"spec":"handoff/v1","event_id":"` + p + d + `","type":"job.succeeded","time":"` + d + `T17:00:00Z","pipeline":"` + p +
			`","business_date":"` + d + `","batch_id":"` + strings.ReplaceAll(d, "-", "") + `","system":"producer","component":"c"}`
	}
	input := strings.Join([]string{line("finance.a", "2026-09-01"), line("finance.b", "2026-09-02"), line("ops.c", "2026-09-02"),
		line("finance.a", "2026-10-01"), "{not json", ""}, "\n")
	f := &File{Name: "x.jsonl", R: strings.NewReader(input)}
	cfg := Config{From: model.MustParseDate("2026-09-01"), To: model.MustParseDate("2026-09-30"), Patterns: []string{"finance.*"}}
	var got []string
	if err := f.Feed(context.Background(), cfg, func(e *model.Event) { got = append(got, e.Pipeline+"/"+e.BusinessDate.String()) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "finance.a/2026-09-01 finance.b/2026-09-02" || f.Rejected != 1 {
		t.Errorf("fed %v, rejected %d; want finance.a/2026-09-01 finance.b/2026-09-02, 1 rejected", got, f.Rejected)
	}
	if err := CheckPatterns([]string{"a["}); err == nil || !strings.Contains(err.Error(), `--pipeline "a["`) {
		t.Errorf("CheckPatterns(a[) = %v", err)
	}
}

// WriteDir writes loadable files and never overwrites one.
func TestWriteDirNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	ss := []learn.Suggestion{{Pipeline: "p.daily", YAML: []byte("pipeline: p.daily\n")}}
	var out bytes.Buffer
	if err := WriteDir(&out, dir, ss); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "p.daily.yaml")); err != nil || string(data) != "pipeline: p.daily\n" {
		t.Fatalf("file: %q, %v", data, err)
	}
	ss[0].YAML = []byte("pipeline: other\n")
	err := WriteDir(&out, dir, ss)
	if err == nil || !strings.Contains(err.Error(), "never overwrite") {
		t.Errorf("second write: %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "p.daily.yaml")); string(data) != "pipeline: p.daily\n" {
		t.Errorf("file overwritten: %q", data)
	}
}

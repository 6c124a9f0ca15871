package lineage

import (
	"context"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// TestLinesLongLineAndNothing: a line over the size limit is rejected with
// its number and reading goes on (it used to abort the file with
// "bufio.Scanner: token too long", the rest unread); events that prove no
// boundary are counted, not lost from the summary.
func TestLinesLongLineAndNothing(t *testing.T) {
	start := `{"eventType":"START","eventTime":"2026-09-30T01:00:00Z","run":{"runId":"r1"},"job":{"name":"p_20260930"}}`
	in := strings.Join([]string{
		start,
		`{"eventTime":"2026-09-30T01:30:00Z","run":{"runId":"r1"},"job":{"name":"p_20260930"}}`,
		`{"eventType":"RUNNING","eventTime":"2026-09-30T01:31:00Z","run":{"runId":"r1"},"job":{"name":"p_20260930"}}`,
		`{"eventType":"START","eventTime":"2026-09-30T01:00:00Z","run":{"runId":"r2"},"job":{"name":"p_20260930"},"pad":"` + strings.Repeat("x", 2<<20) + `"}`,
		`{"eventType":"COMPLETE","eventTime":"2026-09-30T02:00:00Z","run":{"runId":"r1"},"job":{"name":"p_20260930"}}`,
	}, "\n")
	var got []model.Event
	bad := map[int]string{}
	st, err := Lines(context.Background(), strings.NewReader(in), contracts(t), func(es []model.Event) error {
		got = append(got, es...)
		return nil
	}, func(line int, err error) { bad[line] = err.Error() })
	if err != nil {
		t.Fatalf("Lines stopped: %v", err)
	}
	if st != (Stats{Read: 5, Mapped: 2, Rejected: 1, Nothing: 2}) {
		t.Errorf("stats %+v; want 5 read, 2 mapped, 1 rejected, 2 proving nothing", st)
	}
	if len(bad) != 1 || !strings.Contains(bad[4], "over the") {
		t.Errorf("bad lines %v; want line 4, over the size limit", bad)
	}
	if len(got) != 2 || got[1].Type != model.JobSucceeded {
		t.Errorf("events %+v: the line after the long one was not read", got)
	}
}

// TestClaimsConflict: two contracts claiming the same job, literally, by
// the same template, or a literal that a template also matches, fail to
// load, naming both files; distinct namespaces or jobs load.
func TestClaimsConflict(t *testing.T) {
	mk := func(file, pipeline, ns, job string) *contract.Contract {
		y := "pipeline: " + pipeline + "\nbatch_id: \"{yyyymmdd}\"\nopenlineage:\n  job: \"" + job + "\"\n"
		if ns != "" {
			y += "  namespace: " + ns + "\n"
		}
		c, err := contract.Parse(file, []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tt := range []struct {
		name     string
		a, b     *contract.Contract
		conflict bool
	}{
		{"same literal", mk("a.yaml", "a.daily", "", "build.x"), mk("b.yaml", "b.daily", "", "build.x"), true},
		{"same template", mk("a.yaml", "a.daily", "", "x_{yyyymmdd}"), mk("b.yaml", "b.daily", "", "x_{yyyymmdd}"), true},
		{"literal matched by a template", mk("a.yaml", "a.daily", "", "x_20260930"), mk("b.yaml", "b.daily", "", "x_{yyyymmdd}"), true},
		{"one namespace, the other any", mk("a.yaml", "a.daily", "airflow", "build.x"), mk("b.yaml", "b.daily", "", "build.x"), true},
		{"distinct namespaces", mk("a.yaml", "a.daily", "airflow", "build.x"), mk("b.yaml", "b.daily", "dagster", "build.x"), false},
		{"distinct jobs", mk("a.yaml", "a.daily", "", "x_{yyyymmdd}"), mk("b.yaml", "b.daily", "", "y_{yyyymmdd}"), false},
	} {
		set, err := contract.NewSet(tt.a, tt.b)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Lines(context.Background(), strings.NewReader(""), set, func([]model.Event) error { return nil }, func(int, error) {})
		if tt.conflict != (err != nil) || (err != nil && (!strings.Contains(err.Error(), "a.yaml") || !strings.Contains(err.Error(), "b.yaml"))) {
			t.Errorf("%s: %v; want a conflict %v naming a.yaml and b.yaml", tt.name, err, tt.conflict)
		}
		if _, err := NewBridge(Config{Brokers: []string{"127.0.0.1:1"}}, set, nil); tt.conflict != (err != nil) {
			t.Errorf("%s: NewBridge: %v; want a conflict %v", tt.name, err, tt.conflict)
		}
	}
}

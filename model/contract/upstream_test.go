package contract_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

func load(t *testing.T, files map[string]string) (*contract.Set, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, text := range files {
		fsys["c/"+name] = &fstest.MapFile{Data: []byte(text)}
	}
	return contract.LoadFS(fsys, "c")
}

func daily(name string, extra string) string {
	return "pipeline: " + name + "\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\n" + extra
}

// TestUpstreamsLoad: the upstreams key and the OpenLineage inputs, as the
// contract reads them, and every load error at its file and line.
func TestUpstreamsLoad(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		// want: pipeline -> "upstream:date:from" entries; or err
		want map[string][]string
		err  string
	}{
		{"short and long forms", map[string]string{
			"a.yaml": daily("a", ""),
			"b.yaml": daily("b", ""),
			"c.yaml": daily("c", "upstreams:\n  - a\n  - pipeline: b\n    date: previous\n"),
			"d.yaml": daily("d", "upstreams:\n  - pipeline: c\n    date: \"-2d\"\n"),
		}, map[string][]string{"c": {"a:same:upstreams", "b:previous:upstreams"}, "d": {"c:-2d:upstreams"}}, ""},
		{"openlineage input that is another claimed job's output", map[string]string{
			"a.yaml": daily("a", "artifact: \"a_{batch_id}.csv\"\nopenlineage:\n  job: build.a\n"),
			"b.yaml": daily("b", "openlineage:\n  job: build.b\n  inputs: [\"file:/data/out/a_{yyyymmdd}.csv\"]\n"),
		}, map[string][]string{"b": {"a:same:openlineage"}}, ""},
		{"the contract wins where both speak", map[string]string{
			"a.yaml": daily("a", "artifact: \"a_{batch_id}.csv\"\nopenlineage:\n  job: build.a\n"),
			"b.yaml": daily("b", "upstreams: [{pipeline: a, date: previous}]\nopenlineage:\n  job: build.b\n  inputs: [\"file:/data/out/a_{yyyymmdd}.csv\"]\n"),
		}, map[string][]string{"b": {"a:previous:upstreams"}}, ""},
		{"an input no claimed job writes adds nothing", map[string]string{
			"a.yaml": daily("a", "artifact: \"a_{batch_id}.csv\"\n"), // no openlineage block: not a claimed job
			"b.yaml": daily("b", "openlineage:\n  job: build.b\n  inputs: [\"file:/data/out/a_{yyyymmdd}.csv\"]\n"),
		}, map[string][]string{"b": nil}, ""},
		{"unknown upstream", map[string]string{
			"b.yaml": daily("b", "upstreams:\n  - nowhere.daily\n"),
		}, nil, `c/b.yaml:5: upstreams[0].pipeline: "nowhere.daily": no contract defines this pipeline`},
		{"cycle", map[string]string{
			"a.yaml": daily("a", "upstreams: [c]\n"),
			"b.yaml": daily("b", "upstreams: [a]\n"),
			"c.yaml": daily("c", "upstreams:\n  - b\n"),
		}, nil, `c/b.yaml:4: upstreams[0].pipeline: "a" closes a cycle of upstreams (a -> c -> b -> a)`},
		{"itself", map[string]string{"a.yaml": daily("a", "upstreams: [a]\n")}, nil, `c/a.yaml:4: upstreams[0].pipeline: "a" is this contract's own pipeline`},
		{"upstream without batch ids", map[string]string{
			"a.yaml": "pipeline: a\n",
			"b.yaml": daily("b", "upstreams: [a]\n"),
		}, nil, `c/b.yaml:4: upstreams[0].pipeline: "a" (c/a.yaml): its batches cannot be named from a date`},
		{"bad date", map[string]string{
			"a.yaml": daily("a", ""),
			"b.yaml": daily("b", "upstreams: [{pipeline: a, date: tomorrow}]\n"),
		}, nil, `c/b.yaml:4: upstreams[0].date: "tomorrow": want same, previous, or an offset of days back`},
		{"listed twice", map[string]string{
			"a.yaml": daily("a", ""),
			"b.yaml": daily("b", "upstreams:\n  - a\n  - a\n"),
		}, nil, `c/b.yaml:6: upstreams[1].pipeline: "a" is listed twice (first at line 5)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := load(t, tc.files)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range tc.want {
				var got []string
				for _, u := range set.For(p).Upstreams {
					got = append(got, u.Pipeline+":"+u.Text()+":"+u.From)
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("%s upstreams %v, want %v", p, got, want)
				}
			}
		})
	}
}

// TestUpstreamKey: which upstream batch a batch waits for, by date rule.
func TestUpstreamKey(t *testing.T) {
	set, err := load(t, map[string]string{
		"a.yaml": daily("a", ""),
		"w.yaml": "pipeline: w\nschedule: weekdays\nbatch_id: \"{yyyymmdd}\"\n",
		"d.yaml": daily("d", "upstreams:\n  - a\n  - pipeline: w\n    date: previous\n"),
		"e.yaml": daily("e", "upstreams: [{pipeline: a, date: \"-2d\"}, {pipeline: w, date: same}]\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	mon := model.BatchKey{Pipeline: "d", BusinessDate: model.Date{Year: 2026, Month: 10, Day: 5}, BatchID: "20261005"}
	for _, tc := range []struct {
		down model.BatchKey
		up   int
		want string
	}{
		{mon, 0, "a/2026-10-05/20261005"},
		{mon, 1, "w/2026-10-02/20261002"}, // Monday's previous weekday batch is Friday's
		{model.BatchKey{Pipeline: "e", BusinessDate: mon.BusinessDate, BatchID: "20261005"}, 0, "a/2026-10-03/20261003"},
	} {
		c := set.For(tc.down.Pipeline)
		u := c.Upstreams[tc.up]
		got, ok := contract.UpstreamKey(tc.down, u, set.For(u.Pipeline))
		if !ok || got.String() != tc.want {
			t.Errorf("%s upstream %s: %v %v, want %s", tc.down, u.Pipeline, got, ok, tc.want)
		}
	}
	if got := set.Downstreams("a"); strings.Join(got, ",") != "d,e" {
		t.Errorf("downstreams of a: %v", got)
	}
}

package contract_test

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

func named(pipeline, source string) *contract.Contract {
	c := contract.Default(pipeline)
	c.Source = source
	return c
}

func TestSet(t *testing.T) {
	a, b := named("b.daily", "b.yaml"), named("a.daily", "a.yaml")
	s, err := contract.NewSet(a, b)
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	if s.Len() != 2 {
		t.Errorf("Len = %d, want 2", s.Len())
	}
	got := s.Pipelines()
	if strings.Join(got, ",") != "a.daily,b.daily" {
		t.Errorf("Pipelines = %v, want sorted [a.daily b.daily]", got)
	}
	got[0] = "changed"
	if s.Pipelines()[0] != "a.daily" {
		t.Error("Pipelines returns the set's own slice")
	}
	if s.For("b.daily") != a {
		t.Error("For(b.daily) is not the contract given")
	}
	d := s.For("other")
	if !d.IsDefault() || d.Pipeline != "other" {
		t.Errorf("For(other) = %+v, want the default contract", d)
	}

	var nilSet *contract.Set
	if nilSet.Len() != 0 || nilSet.Pipelines() != nil || !nilSet.For("x").IsDefault() {
		t.Error("nil Set misbehaves")
	}
}

func TestSetConcurrentReads(t *testing.T) {
	s, err := contract.NewSet(named("p", "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				if s.For("p").IsDefault() || !s.For("q").IsDefault() {
					errs <- "wrong contract"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestSetDefaultShared: the default contract For gives a pipeline without
// one is Default's, the same one on every call of a Set (not one per
// call), one per pipeline, and a Set's own: a reload (a new Set) does
// not see the defaults of the old one.
func TestSetDefaultShared(t *testing.T) {
	s, err := contract.NewSet(named("p", "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pipeline := range []string{"q", "r.daily"} {
		d := s.For(pipeline)
		if !reflect.DeepEqual(d, contract.Default(pipeline)) {
			t.Errorf("For(%s) = %+v, want Default(%s)", pipeline, d, pipeline)
		}
		if s.For(pipeline) != d {
			t.Errorf("For(%s) twice: two contracts, want the one shared", pipeline)
		}
	}
	if s.For("q") == s.For("r.daily") {
		t.Error("For(q) and For(r.daily) are one contract")
	}
	again, err := contract.NewSet(named("q", "q.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if again.For("q").IsDefault() || again.For("r.daily") == s.For("r.daily") {
		t.Error("a new Set gives the old Set's default contracts")
	}
}

// TestSetDefaultSharedConcurrent: goroutines asking For of many
// pipelines at once (the fold and the diagnoses of a page) each get the
// pipeline's default contract, the same one.
func TestSetDefaultSharedConcurrent(t *testing.T) {
	s, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 2000)
	for i := range names {
		names[i] = fmt.Sprintf("p%04d", i)
	}
	got := make([][]*contract.Contract, 4)
	var wg sync.WaitGroup
	for g := range got {
		got[g] = make([]*contract.Contract, len(names))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				j := (i + g*500) % len(names) // each goroutine from its own start
				if g%2 == 1 {
					j = len(names) - 1 - j
				}
				got[g][j] = s.For(names[j])
			}
		}()
	}
	wg.Wait()
	for i, name := range names {
		for g := range got {
			if c := got[g][i]; c.Pipeline != name || !c.IsDefault() || c != s.For(name) {
				t.Fatalf("goroutine %d: For(%s) = %p (pipeline %q), want the one default contract %p", g, name, c, c.Pipeline, s.For(name))
			}
		}
	}
}

func TestNewSetErrors(t *testing.T) {
	tests := []struct {
		name string
		cs   []*contract.Contract
		err  string
	}{
		{"duplicate", []*contract.Contract{named("p", "one.yaml"), named("p", "two.yaml")}, `two.yaml: pipeline "p" already has a contract in one.yaml`},
		{"nil", []*contract.Contract{nil}, "contract set: nil contract"},
		{"no pipeline", []*contract.Contract{named("", "x.yaml")}, "contract set: x.yaml: no pipeline"},
	}
	for _, tt := range tests {
		_, err := contract.NewSet(tt.cs...)
		if err == nil || err.Error() != tt.err {
			t.Errorf("%s: NewSet error = %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestLoadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"contracts/a.yaml":         {Data: []byte("pipeline: a.daily\nschedule: daily\n")},
		"contracts/b.yml":          {Data: []byte("pipeline: b.daily\n")},
		"contracts/README.md":      {Data: []byte("# not a contract\n")},
		"contracts/.hidden.yaml":   {Data: []byte("not: [valid\n")},
		"contracts/old/c.yaml":     {Data: []byte("pipeline: a.daily\n")},
		"dup/one.yaml":             {Data: []byte("pipeline: p\n")},
		"dup/two.yaml":             {Data: []byte("pipeline: p\n")},
		"bad/x.yaml":               {Data: []byte("pipeline: x\nschedule: fortnightly\n")},
		"bad/y.yaml":               {Data: []byte("pipeline: y\nrows:\n  min: -2\n")},
		"empty/README":             {Data: []byte("nothing yet\n")},
		"single/p.yaml":            {Data: []byte("pipeline: single\n")},
		"contracts-dir-as-file.md": {Data: []byte("x")},
	}
	s, err := contract.LoadFS(fsys, "contracts")
	if err != nil {
		t.Fatalf("LoadFS(contracts): %v", err)
	}
	if got := strings.Join(s.Pipelines(), ","); got != "a.daily,b.daily" {
		t.Errorf("Pipelines = %s, want a.daily,b.daily", got)
	}
	if c := s.For("a.daily"); c.Source != "contracts/a.yaml" || c.Schedule != "daily" {
		t.Errorf("For(a.daily) = source %q schedule %q", c.Source, c.Schedule)
	}

	s, err = contract.LoadFS(fsys, "single/p.yaml")
	if err != nil || s.Len() != 1 || s.For("single").Source != "single/p.yaml" {
		t.Errorf("LoadFS(single file) = %v, %v", s.Pipelines(), err)
	}

	s, err = contract.LoadFS(fsys, "empty")
	if err != nil || s.Len() != 0 {
		t.Errorf("LoadFS(empty) = %v, %v; want an empty set", s.Pipelines(), err)
	}

	errTests := []struct {
		path string
		err  string
	}{
		{"dup", `dup/two.yaml: pipeline "p" already has a contract in dup/one.yaml`},
		{"bad", "bad/x.yaml:2: schedule: unknown schedule \"fortnightly\" (want daily, weekdays, hourly or a cron expression such as \"30 6 * * 1-5\", or leave it out)\nbad/y.yaml:3: rows.min: -2: must not be negative"},
	}
	for _, tt := range errTests {
		_, err := contract.LoadFS(fsys, tt.path)
		if err == nil || err.Error() != tt.err {
			t.Errorf("LoadFS(%s) error\n got %v\nwant %s", tt.path, err, tt.err)
		}
	}
	if _, err := contract.LoadFS(fsys, "missing"); !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "loading contracts: ") {
		t.Errorf("LoadFS(missing) = %v, want fs.ErrNotExist", err)
	}
}

// TestSetScheduled: Scheduled says whether a pipeline's contract may
// expect batches, as Expected does, for a parsed schedule, a contract
// without one, a schedule given in code, and a pipeline with no contract.
func TestSetScheduled(t *testing.T) {
	daily, err := contract.Parse("d.yaml", []byte("pipeline: d\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	coded := named("c", "c.yaml")
	coded.Schedule, coded.BatchID = "daily", contract.MustTemplate("{yyyymmdd}")
	s, err := contract.NewSet(daily, named("n", "n.yaml"), coded)
	if err != nil {
		t.Fatal(err)
	}
	day := model.MustParseDate("2026-09-06")
	for _, tt := range []struct {
		pipeline string
		want     bool
	}{{"d", true}, {"n", false}, {"c", true}, {"none", false}} {
		if got := s.Scheduled(tt.pipeline); got != tt.want {
			t.Errorf("Scheduled(%q) = %v, want %v", tt.pipeline, got, tt.want)
		}
		// Without a schedule, nothing is expected: what a caller that
		// skips Expected on false relies on.
		if !tt.want && len(s.For(tt.pipeline).Expected(day, day)) != 0 {
			t.Errorf("%q: not scheduled, but its contract expects %v", tt.pipeline, s.For(tt.pipeline).Expected(day, day))
		}
		if tt.want && len(s.For(tt.pipeline).Expected(day, day)) == 0 {
			t.Errorf("%q: scheduled, but its contract expects nothing on %s", tt.pipeline, day)
		}
	}
	var none *contract.Set
	if none.Scheduled("d") {
		t.Error("a nil Set says a pipeline is scheduled")
	}
}

package upstream_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// graph loads daily contracts named by "pipeline: upstream,upstream" lines
// ("name@previous" for the previous date).
func graph(t *testing.T, spec string) *contract.Set {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, line := range strings.Split(strings.TrimSpace(spec), "\n") {
		name, ups, _ := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		text := "pipeline: " + name + "\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\n"
		if ups = strings.TrimSpace(ups); ups != "" {
			text += "upstreams:\n"
			for _, u := range strings.Split(ups, ",") {
				p, date, ok := strings.Cut(strings.TrimSpace(u), "@")
				if !ok {
					date = "same"
				}
				text += "  - {pipeline: " + p + ", date: " + date + "}\n"
			}
		}
		fsys["c/"+name+".yaml"] = &fstest.MapFile{Data: []byte(text)}
	}
	set, err := contract.LoadFS(fsys, "c")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

var day = model.Date{Year: 2026, Month: 9, Day: 30}

func key(p string, d model.Date) model.BatchKey {
	return model.BatchKey{Pipeline: p, BusinessDate: d, BatchID: strings.ReplaceAll(d.String(), "-", "")}
}

// table records outcomes: "p=delivered", "p=not_identified@signal_delivered",
// "p=absent" (known, no event), each on day unless "p~prev" is used for
// the day before; "p#r2=..." is re-run 2 of p's batch. Every pipeline is known from the day before.
func table(t *testing.T, set *contract.Set, outcomes ...string) *upstream.Table {
	t.Helper()
	var tb upstream.Table
	for _, p := range set.Pipelines() {
		tb.Known(p, day.AddDays(-1))
	}
	for _, o := range outcomes {
		name, what, _ := strings.Cut(o, "=")
		d := day
		if p, ok := strings.CutSuffix(name, "~prev"); ok {
			name, d = p, day.AddDays(-1)
		}
		if what == "absent" {
			continue
		}
		name, rerun, _ := strings.Cut(name, "#")
		k := key(name, d)
		if rerun != "" {
			k.BatchID += "-" + rerun
		}
		verdict, missing, _ := strings.Cut(what, "@")
		v, err := model.ParseHypothesis(verdict)
		if err != nil {
			t.Fatal(err)
		}
		diag := replay.Diagnosis{Batch: k.String(), Verdict: v, FirstMissing: missing, Events: 3}
		if err := tb.Add(&diag); err != nil {
			t.Fatal(err)
		}
	}
	return &tb
}

// TestBlocked: the upstream rule over graphs that exercise it, each case
// naming what blocks the batch and its roots (or "" when nothing does).
func TestBlocked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     string
		outcomes []string
		batch    model.BatchKey
		by, root string
	}{
		{"direct upstream stopped", "a:\nb: a", []string{"a=not_identified@signal_delivered", "b=not_produced@produced"},
			key("b", day), "a/2026-09-30/20260930", "a/2026-09-30/20260930"},
		{"upstream delivered", "a:\nb: a", []string{"a=delivered", "b=not_produced@produced"}, key("b", day), "", ""},
		{"chain: root is the furthest not blocked", "a:\nb: a\nc: b", []string{"a=not_transferred@transferred", "b=absent"},
			key("c", day), "b/2026-09-30/20260930", "a/2026-09-30/20260930"},
		{"diamond: two paths to one root, named once", "a:\nb: a\nc: a\nd: b,c", []string{"a=not_produced@produced", "b=absent", "c=absent"},
			key("d", day), "b/2026-09-30/20260930,c/2026-09-30/20260930", "a/2026-09-30/20260930"},
		{"blocked by two roots", "a:\nx:\nb: a\nd: b,x", []string{"a=not_final@finalized", "b=absent", "x=not_identified@signal_delivered"},
			key("d", day), "b/2026-09-30/20260930,x/2026-09-30/20260930", "a/2026-09-30/20260930,x/2026-09-30/20260930"},
		{"upstream on the previous date", "a:\nb: a@previous", []string{"a~prev=not_consumed@consumed", "a=delivered"},
			key("b", day), "a/2026-09-29/20260929", "a/2026-09-29/20260929"},
		{"previous date delivered, same date not: not blocked", "a:\nb: a@previous", []string{"a~prev=delivered", "a=not_produced@produced"},
			key("b", day), "", ""},
		{"absent upstream counts as not delivered", "a:\nb: a", nil, key("b", day), "a/2026-09-30/20260930", "a/2026-09-30/20260930"},
		{"a re-run delivered the upstream's date: not blocked", "a:\nb: a", []string{"a=not_produced@produced", "a#r1=delivered", "b=not_produced@produced"},
			key("b", day), "", ""},
		{"the re-run failed again: it is the broken link", "a:\nb: a", []string{"a=not_produced@produced", "a#r1=not_final@finalized"},
			key("b", day), "a/2026-09-30/20260930-r1", "a/2026-09-30/20260930-r1"},
		{"the latest delivered attempt speaks, not the latest", "a:\nb: a", []string{"a=not_produced@produced", "a#r1=delivered", "a#r2=not_produced@produced"},
			key("b", day), "", ""},
		{"a gap in the re-run numbers", "a:\nb: a", []string{"a=not_produced@produced", "a#r2=not_transferred@transferred"},
			key("b", day), "a/2026-09-30/20260930-r2", "a/2026-09-30/20260930-r2"},
		{"a re-run stopped behind its own upstream", "x:\na: x\nb: a", []string{"x=not_identified@signal_delivered", "a#r1=not_produced@produced"},
			key("b", day), "a/2026-09-30/20260930-r1", "x/2026-09-30/20260930"},
		{"upstream before its pipeline's history: not known", "a:\nb: a", nil, key("b", day.AddDays(-5)), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := graph(t, tc.spec)
			tb := table(t, set, tc.outcomes...)
			b := upstream.New(set, tb).Blocked(tc.batch)
			var by, roots []string
			if b != nil {
				for _, l := range b.By {
					by = append(by, l.Batch)
				}
				for _, l := range b.Roots {
					roots = append(roots, l.Batch)
				}
			}
			if got := strings.Join(by, ","); got != tc.by {
				t.Errorf("blocked by %q, want %q", got, tc.by)
			}
			if got := strings.Join(roots, ","); got != tc.root {
				t.Errorf("roots %q, want %q", got, tc.root)
			}
		})
	}
}

// TestBlockedOrderIndependent: the answer for every batch is the same
// whichever batch is asked first (the memo must not leak order).
func TestBlockedOrderIndependent(t *testing.T) {
	set := graph(t, "a:\nx:\nb: a\nc: b,x\nd: c\ne: d,a")
	tb := table(t, set, "a=not_produced@produced", "x=not_final@finalized")
	keys := []model.BatchKey{key("a", day), key("b", day), key("c", day), key("d", day), key("e", day), key("x", day)}
	ref := map[model.BatchKey]string{}
	for _, k := range keys {
		ref[k] = upstream.New(set, tb).Blocked(k).Cause()
	}
	for i := range keys {
		r := upstream.New(set, tb)
		for j := range keys {
			k := keys[(i+len(keys)-j)%len(keys)]
			if got := r.Blocked(k).Cause(); got != ref[k] {
				t.Fatalf("order %d: %s: %q, want %q", i, k, got, ref[k])
			}
		}
	}
	if want := "blocked by d/2026-09-30/20260930, which has no delivery event (not_produced); and by a/2026-09-30/20260930, which has no delivery event (not_produced)"; !strings.HasPrefix(ref[key("e", day)], "blocked by a/") {
		t.Errorf("cause of e: %q (want the links in key order, like %q)", ref[key("e", day)], want)
	}
}

// TestDownstream: the batches that wait for a batch, through the graph.
func TestDownstream(t *testing.T) {
	set := graph(t, "a:\nb: a\nc: b\nd: a@previous")
	g := upstream.NewGraph(set)
	var got []string
	for _, k := range g.Downstream(key("a", day)) {
		got = append(got, k.String())
	}
	want := "b/2026-09-30/20260930,c/2026-09-30/20260930,d/2026-10-01/20261001"
	if strings.Join(got, ",") != want {
		t.Errorf("downstream of a: %v, want %s", got, want)
	}
	if n := g.Needs([]string{"c"}); strings.Join(n, ",") != "a,b" {
		t.Errorf("c needs %v, want a,b", n)
	}
}

// Package upstream is the cross-batch step of the replay: a batch that is
// not delivered, whose contract lists upstream pipelines (contract
// Upstreams) whose batches are not delivered either, is blocked, and its
// diagnosis names the cause: the upstream batches, their verdicts and
// first missing boundaries, and the roots (the furthest upstream batches
// that are not themselves blocked). docs/incidents.md has the rule.
//
// The step is pure and as of one time: it reads other batches' outcomes
// through Batches, which each surface answers from what it holds
// (batches.Set for diagnose, a Table built from the stored history for
// diagnose and backfill over ClickHouse, the detector's open and closed
// batches for detect). The answer depends only on those outcomes, never
// on the order batches were evaluated in, so every surface names the
// same cause and root.
package upstream

import (
	"sort"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Contracts gives a pipeline's contract (contract.Set implements it).
type Contracts interface {
	For(pipeline string) *contract.Contract
}

// Batches is what the rule reads of other batches, as of the evaluation.
type Batches interface {
	// First returns the pipeline's earliest business date with events:
	// a batch of an earlier date is not known, so it blocks nothing.
	First(pipeline string) (model.Date, bool)
	// Brief returns batch k's verdict and first missing required boundary
	// (replay.State.Brief), and false when k has no event.
	Brief(k model.BatchKey) (verdict model.Hypothesis, firstMissing model.Boundary, seen bool)
}

// Resolver answers Blocked for many batches of one evaluation round,
// remembering what it worked out: a chain's root is found once however
// many batches wait on it. It is not safe for concurrent use.
type Resolver struct {
	cs   Contracts
	b    Batches
	memo map[model.BatchKey]*node
}

type node struct {
	link      replay.Link
	delivered bool
	known     bool
	blocked   *replay.Blocked
	state     int8 // 0 new, 1 in progress, 2 done
}

// New returns a Resolver over b.
func New(cs Contracts, b Batches) *Resolver {
	return &Resolver{cs: cs, b: b, memo: map[model.BatchKey]*node{}}
}

// Blocked returns what blocks batch k: its required upstream batches that
// are not delivered and the roots of their chains; nil when its contract
// lists no upstream or every upstream batch is delivered or not known.
// It does not look at k's own verdict: the replay attaches it to a
// diagnosis that is not delivered (replay.Context.Blocked).
func (r *Resolver) Blocked(k model.BatchKey) *replay.Blocked {
	return r.resolve(k).blocked
}

func (r *Resolver) resolve(k model.BatchKey) *node {
	if n, ok := r.memo[k]; ok {
		if n.state == 1 {
			// A cycle, which a contract.Set refuses to load: nothing is
			// blocked along it rather than a loop.
			return &node{link: n.link, delivered: n.delivered, known: n.known, state: 2}
		}
		return n
	}
	n := &node{state: 1}
	r.memo[k] = n
	c := r.cs.For(k.Pipeline)
	n.link = replay.Link{Batch: k.String()}
	v, fm, seen := r.b.Brief(k)
	if !seen {
		v, fm = model.NotProduced, firstRequired(c)
		first, ok := r.b.First(k.Pipeline)
		n.known = ok && k.BusinessDate.Compare(first) >= 0
	} else {
		n.known = true
	}
	n.link.Seen, n.link.Verdict = seen, v
	if fm != model.NoBoundary {
		n.link.FirstMissing = fm.String()
	}
	n.delivered = v == model.Delivered
	var by, roots []replay.Link
	for _, u := range c.Upstreams {
		uc := r.cs.For(u.Pipeline)
		uk, ok := contract.UpstreamKey(k, u, uc)
		if !ok {
			continue
		}
		un := r.resolve(r.speaker(uk, uc))
		if un.delivered || !un.known {
			continue
		}
		by = append(by, un.link)
		if un.blocked != nil {
			roots = append(roots, un.blocked.Roots...)
		} else {
			roots = append(roots, un.link)
		}
	}
	if len(by) > 0 {
		n.blocked = &replay.Blocked{By: sortLinks(by), Roots: sortLinks(roots)}
	}
	n.state = 2
	return n
}

// rerunProbe is how many re-run numbers in a row may have no event
// before the search for a date's later attempts stops; maxRerun bounds
// the search whatever the answers.
const (
	rerunProbe = 3
	maxRerun   = 1000
)

// speaker returns the attempt of scheduled batch k's date that speaks for
// it, by the rule the replay applies to the attempts of one date
// (replay.Attempts): the latest delivered attempt, or when none is
// delivered the latest attempt with events; k itself when it has no
// declared re-run with events. A downstream waits on the date's delivery,
// not on the attempt the schedule named: a failed run that a re-run
// delivered blocks nothing, and a re-run that failed again is the link
// that is broken. Any delivered attempt ends the search: which one
// speaks does not matter to a downstream once one is delivered.
func (r *Resolver) speaker(k model.BatchKey, c *contract.Contract) model.BatchKey {
	v, _, seen := r.b.Brief(k)
	if c == nil || c.Reruns.Off() || seen && v == model.Delivered {
		return k
	}
	latest := k
	for n, miss := 1, 0; miss < rerunProbe && n <= maxRerun; n++ {
		rk := model.BatchKey{Pipeline: k.Pipeline, BusinessDate: k.BusinessDate, BatchID: c.Reruns.Render(k.BatchID, n)}
		v, _, seen := r.b.Brief(rk)
		switch {
		case !seen:
			miss++
		case v == model.Delivered:
			return rk
		default:
			miss, latest = 0, rk
		}
	}
	return latest
}

func firstRequired(c *contract.Contract) model.Boundary {
	for _, b := range model.Ladder {
		if c.Requires(b) {
			return b
		}
	}
	return model.NoBoundary
}

// sortLinks sorts links by batch and drops repeats (two paths to one
// root, a diamond, name it once).
func sortLinks(ls []replay.Link) []replay.Link {
	sort.Slice(ls, func(i, j int) bool { return ls[i].Batch < ls[j].Batch })
	out := ls[:0]
	for i, l := range ls {
		if i > 0 && l.Batch == ls[i-1].Batch {
			continue
		}
		out = append(out, l)
	}
	return out
}

// Table is Batches from outcomes recorded beforehand: what a read of the
// stored history learnt of the upstream pipelines, before the batches
// that wait on them are diagnosed. The zero Table is empty and usable.
type Table struct {
	m     map[model.BatchKey]brief
	first map[string]model.Date
}

type brief struct {
	verdict model.Hypothesis
	missing model.Boundary
}

// Add records diagnosis d's outcome (a batch with no event is recorded
// as unseen: not delivered once its date is known).
func (t *Table) Add(d *replay.Diagnosis) error {
	k, err := model.ParseBatchKey(d.Batch)
	if err != nil {
		return err
	}
	if t.m == nil {
		t.m, t.first = map[model.BatchKey]brief{}, map[string]model.Date{}
	}
	if d.Events == 0 {
		return nil
	}
	b := brief{verdict: d.Verdict}
	if d.FirstMissing != "" {
		if b.missing, err = model.ParseBoundary(d.FirstMissing); err != nil {
			return err
		}
	}
	t.m[k] = b
	t.Known(k.Pipeline, k.BusinessDate)
	return nil
}

// Known lowers pipeline's first known date to first.
func (t *Table) Known(pipeline string, first model.Date) {
	if t.first == nil {
		t.m, t.first = map[model.BatchKey]brief{}, map[string]model.Date{}
	}
	if f, ok := t.first[pipeline]; !ok || first.Compare(f) < 0 {
		t.first[pipeline] = first
	}
}

// First implements Batches.
func (t *Table) First(pipeline string) (model.Date, bool) {
	f, ok := t.first[pipeline]
	return f, ok
}

// Brief implements Batches.
func (t *Table) Brief(k model.BatchKey) (model.Hypothesis, model.Boundary, bool) {
	b, ok := t.m[k]
	return b.verdict, b.missing, ok
}

// Len is the number of batches recorded.
func (t *Table) Len() int { return len(t.m) }

// Graph is the reverse of the contracts' upstreams: which batches wait
// for a batch, so that a surface holding many batches knows whose
// diagnosis a change of one touches.
type Graph struct {
	cs   Contracts
	down map[string][]string
	up   map[string][]string
}

// Lister is Contracts that also lists its pipelines (contract.Set).
type Lister interface {
	Contracts
	Pipelines() []string
}

// NewGraph returns the graph of cs's upstreams.
func NewGraph(cs Lister) *Graph {
	g := &Graph{cs: cs, down: map[string][]string{}, up: map[string][]string{}}
	for _, p := range cs.Pipelines() {
		for _, u := range cs.For(p).Upstreams {
			g.down[u.Pipeline] = append(g.down[u.Pipeline], p)
			g.up[p] = append(g.up[p], u.Pipeline)
		}
	}
	for _, l := range g.down {
		sort.Strings(l)
	}
	return g
}

// Empty reports whether no contract lists an upstream.
func (g *Graph) Empty() bool { return g == nil || len(g.down) == 0 }

// Needs returns the pipelines, sorted, whose batches the diagnoses of
// pipelines read through upstreams (transitively, the pipelines
// themselves excluded unless they are an upstream of another).
func (g *Graph) Needs(pipelines []string) []string {
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		for _, u := range g.up[p] {
			if !seen[u] {
				seen[u] = true
				walk(u)
			}
		}
	}
	for _, p := range pipelines {
		walk(p)
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// MaxBack is the most days before a batch's date that one of its
// upstream batches (transitively) can fall on: how far back a read of a
// range must reach for the upstreams of its first date.
func (g *Graph) MaxBack() int {
	memo := map[string]int{}
	var back func(p string, depth int) int
	back = func(p string, depth int) int {
		if v, ok := memo[p]; ok {
			return v
		}
		if depth > len(g.up)+1 {
			return 0
		}
		m := 0
		for _, u := range g.cs.For(p).Upstreams {
			d := 0
			switch u.Date {
			case contract.PreviousDate:
				d = 8 // a weekly gap, a holiday or two
			case contract.OffsetDate:
				d = -u.OffsetDays
			}
			m = max(m, d+back(u.Pipeline, depth+1))
		}
		memo[p] = m
		return m
	}
	m := 0
	for p := range g.up {
		m = max(m, back(p, 0))
	}
	return m
}

// Downstream returns the batches that wait for batch k, directly or
// through others, in key order: those whose dates derive their batch ids
// (an expected batch of their calendar, or the id their contract derives
// from the date).
func (g *Graph) Downstream(k model.BatchKey) []model.BatchKey {
	if g.Empty() {
		return nil
	}
	seen := map[model.BatchKey]bool{}
	var out []model.BatchKey
	var walk func(k model.BatchKey)
	walk = func(k model.BatchKey) {
		for _, p := range g.down[k.Pipeline] {
			c := g.cs.For(p)
			for _, u := range c.Upstreams {
				if u.Pipeline != k.Pipeline {
					continue
				}
				for _, dk := range g.waiting(k, c, u) {
					if !seen[dk] {
						seen[dk] = true
						out = append(out, dk)
						walk(dk)
					}
				}
			}
		}
	}
	walk(k)
	sort.Slice(out, func(i, j int) bool { return out[i].Compare(out[j]) < 0 })
	return out
}

// waiting returns the batches of c's pipeline whose upstream u is k.
func (g *Graph) waiting(k model.BatchKey, c *contract.Contract, u contract.Upstream) []model.BatchKey {
	var dates []model.Date
	switch u.Date {
	case contract.PreviousDate:
		for i := 1; i <= 8; i++ {
			dates = append(dates, k.BusinessDate.AddDays(i))
		}
	case contract.OffsetDate:
		dates = append(dates, k.BusinessDate.AddDays(-u.OffsetDays))
	default:
		dates = append(dates, k.BusinessDate)
	}
	uc := g.cs.For(u.Pipeline)
	var out []model.BatchKey
	for _, d := range dates {
		keys := c.Expected(d, d)
		if len(keys) == 0 {
			if id, ok := c.ExpectedBatchID(c.Pipeline, d); ok {
				keys = []model.BatchKey{{Pipeline: c.Pipeline, BusinessDate: d, BatchID: id}}
			}
		}
		for _, dk := range keys {
			if uk, ok := contract.UpstreamKey(dk, u, uc); ok && uk == k {
				out = append(out, dk)
			}
		}
	}
	return out
}

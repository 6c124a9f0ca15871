package batches

import (
	"cmp"
	"slices"
	"strings"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Attempt is one attempt of a date with events: its key, its re-run
// number (0 for the scheduled id) and its verdict.
type Attempt struct {
	Key     model.BatchKey
	Rerun   int
	Verdict model.Hypothesis
}

// AttemptsOf returns the scheduled batch that batch k is an attempt of
// (k itself unless k is a declared re-run), and the attempts of it with
// events as of the evaluation, in re-run order: the scheduled batch and
// its declared re-runs (contract.AttemptOf). A batch of the same date the
// schedule expects in its own right (another hour), or an undeclared id,
// is not an attempt.
func AttemptsOf(k model.BatchKey, c *contract.Contract, n Neighbours) (model.BatchKey, []Attempt) {
	base, _, _ := c.AttemptOf(k)
	var out []Attempt
	if v, seen := n.Verdict(base); seen {
		out = append(out, Attempt{Key: base, Verdict: v})
	}
	for _, o := range n.Reruns(base) {
		_, r, _ := c.AttemptOf(o)
		if v, seen := n.Verdict(o); seen {
			out = append(out, Attempt{Key: o, Rerun: r, Verdict: v})
		}
	}
	slices.SortFunc(out, func(a, b Attempt) int { return cmp.Compare(a.Rerun, b.Rerun) })
	return base, out
}

// Speaker returns the attempt that speaks for the date: the latest
// delivered one, or the latest one when none is delivered. It reports
// false when there is none.
func Speaker(attempts []Attempt) (Attempt, bool) {
	for i := len(attempts) - 1; i >= 0; i-- {
		if attempts[i].Verdict == model.Delivered {
			return attempts[i], true
		}
	}
	if len(attempts) == 0 {
		return Attempt{}, false
	}
	return attempts[len(attempts)-1], true
}

// AttemptContext builds the attempts context of batch k (replay.Context's
// Attempt): empty when k is its date's only attempt and not a re-run.
func AttemptContext(k model.BatchKey, c *contract.Contract, n Neighbours) replay.Attempts {
	if c.Reruns.Off() {
		return replay.Attempts{}
	}
	_, rerun, _ := c.AttemptOf(k)
	if rerun == 0 && !hasRerun(k, c, n) {
		return replay.Attempts{}
	}
	base, attempts := AttemptsOf(k, c, n)
	if rerun == 0 && (len(attempts) == 0 || len(attempts) == 1 && attempts[0].Key == k) {
		return replay.Attempts{}
	}
	a := replay.Attempts{Of: base, Seen: make([]model.BatchKey, len(attempts))}
	for i, at := range attempts {
		a.Seen[i] = at.Key
	}
	if sp, ok := Speaker(attempts); ok && sp.Key != k {
		a.SupersededBy = sp.Key
	}
	return a
}

// hasRerun reports whether scheduled batch k has a declared re-run with
// events: the cheap test that keeps a date's only attempt from paying for
// the verdicts of its neighbours.
func hasRerun(k model.BatchKey, c *contract.Contract, n Neighbours) bool {
	return len(n.Reruns(k)) > 0
}

// RerunIndex lists the declared re-runs with events of each scheduled
// batch, so that the attempts of a date are found without a look at the
// date's other batches (a cron schedule can have 1,440 a date). The zero
// RerunIndex is empty and ready. Keys and ids are its own copies.
type RerunIndex struct {
	m map[model.BatchKey][]string
}

// Add records batch k if it is a declared re-run under c; it reports
// whether it is.
func (x *RerunIndex) Add(c *contract.Contract, k model.BatchKey) bool {
	base, _, ok := c.AttemptOf(k)
	if !ok {
		return false
	}
	if x.m == nil {
		x.m = make(map[model.BatchKey][]string)
	}
	ids := x.m[base]
	i, found := slices.BinarySearch(ids, k.BatchID)
	if found {
		return true
	}
	if ids == nil {
		base = model.BatchKey{Pipeline: strings.Clone(base.Pipeline), BusinessDate: base.BusinessDate, BatchID: strings.Clone(base.BatchID)}
	}
	x.m[base] = slices.Insert(ids, i, strings.Clone(k.BatchID))
	return true
}

// Remove forgets batch k.
func (x *RerunIndex) Remove(c *contract.Contract, k model.BatchKey) {
	base, _, ok := c.AttemptOf(k)
	if !ok || x.m == nil {
		return
	}
	ids := slices.DeleteFunc(x.m[base], func(id string) bool { return id == k.BatchID })
	if len(ids) == 0 {
		delete(x.m, base)
	} else {
		x.m[base] = ids
	}
}

// Of returns the recorded re-runs of scheduled batch base, by batch id.
func (x *RerunIndex) Of(base model.BatchKey) []model.BatchKey {
	ids := x.m[base]
	if len(ids) == 0 {
		return nil
	}
	out := make([]model.BatchKey, len(ids))
	for i, id := range ids {
		out[i] = model.BatchKey{Pipeline: base.Pipeline, BusinessDate: base.BusinessDate, BatchID: id}
	}
	return out
}

// Ids returns the recorded re-run ids of scheduled batch base (shared:
// do not modify).
func (x *RerunIndex) Ids(base model.BatchKey) []string { return x.m[base] }

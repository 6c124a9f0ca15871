package replay

import (
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Blocked is why a batch that is not delivered may not be its own fault:
// batches of the pipelines its contract lists as upstreams are not
// delivered either (docs/incidents.md). The batch keeps its own verdict;
// Blocked names the cause beside it. analyzer/upstream computes it, for
// every surface alike, from the other batches' outcomes as of the same
// time.
type Blocked struct {
	// By lists the required upstream batches that are not delivered, in
	// batch key order.
	By []Link `json:"by"`
	// Roots are the furthest upstream batches along those chains that are
	// not themselves blocked: where the incident starts. Several when two
	// chains start at two breaks; in batch key order.
	Roots []Link `json:"roots"`
}

// Link is one upstream batch as a blocked batch's diagnosis reports it.
type Link struct {
	Batch string `json:"batch"`
	// Seen is whether the batch has any event as of the evaluation; an
	// expected batch that never showed up is not delivered.
	Seen    bool             `json:"seen"`
	Verdict model.Hypothesis `json:"verdict"`
	// FirstMissing is the upstream batch's first missing required
	// boundary ("" when every one is proven).
	FirstMissing string `json:"first_missing"`
}

// Text is the link in the words of a report: "risk-input.daily/2026-09-30/20260930,
// which stopped at signal_delivered (not_identified)".
func (l Link) Text() string {
	s := l.Batch + ", which "
	switch {
	case !l.Seen:
		s += "has no delivery event (" + l.Verdict.String() + ")"
	case l.FirstMissing != "":
		s += "stopped at " + l.FirstMissing + " (" + l.Verdict.String() + ")"
	default:
		s += "is " + l.Verdict.String()
	}
	return s
}

// Cause is the blocked batch's cause in one line, after its verdict:
// "blocked by A, which stopped at signal_delivered (not_identified)",
// with the roots added when they are not the direct upstreams.
func (b *Blocked) Cause() string {
	if b == nil || len(b.By) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("blocked by ")
	for i, l := range b.By {
		if i > 0 {
			s.WriteString("; and by ")
		}
		s.WriteString(l.Text())
	}
	if !sameLinks(b.By, b.Roots) {
		s.WriteString("; root")
		if len(b.Roots) > 1 {
			s.WriteString("s")
		}
		s.WriteString(": ")
		for i, l := range b.Roots {
			if i > 0 {
				s.WriteString("; ")
			}
			s.WriteString(l.Text())
		}
	}
	return s.String()
}

func sameLinks(a, b []Link) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Batch != b[i].Batch {
			return false
		}
	}
	return true
}

// Brief is what the upstream rule needs of a batch: whether it has
// events, its verdict and its first missing required boundary, as of asOf
// (the cheap part of Evaluate, as Outcome is).
func (s *State) Brief(c *contract.Contract, asOf time.Time) (verdict model.Hypothesis, firstMissing model.Boundary, seen bool) {
	var v view
	v.init(s, c, asOf.UTC().Truncate(time.Millisecond), false, nil)
	first := model.NoBoundary
	for _, b := range model.Ladder {
		if c.Requires(b) && len(v.proven[b]) == 0 {
			first = b
			break
		}
	}
	if len(v.recs) == 0 {
		return model.NotProduced, first, false
	}
	return v.verdict(), first, true
}

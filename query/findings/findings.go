// Package findings is `handoff findings`' and `handoff serve`'s view of
// the streaming detector's findings: the filter a person gives, how late a
// finding is, and the listing (text, JSON, JSON lines). The findings
// themselves are the analyzer's (detect.Finding); they are read back from
// ClickHouse by store/judgements, the one home of that SQL, whose filter
// and result this package names for its callers.
package findings

import (
	"context"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/store/judgements"
)

// The selection and the result are store/judgements': the names below
// are theirs, so a command filters findings without knowing where the SQL
// lives.
type (
	// Filter selects findings (judgements.Filter).
	Filter = judgements.Filter
	// FieldError is a Filter field with a value Check refuses.
	FieldError = judgements.FieldError
	// Result is what Read found.
	Result = judgements.Result
	// Order is the order findings are read in.
	Order = judgements.Order
	// Querier runs a read (judgements.Querier).
	Querier = judgements.Querier
)

// Finding states, as stored.
const (
	StateOpen     = judgements.StateOpen
	StateResolved = judgements.StateResolved
)

// Orders (judgements.Order).
const (
	Unordered = judgements.Unordered
	ByRaised  = judgements.ByRaised
	ByBatch   = judgements.ByBatch
)

// Kinds returns every kind a finding may have (judgements.Kinds).
func Kinds() []string { return judgements.Kinds() }

// Read reads at most limit findings (0: every one) that f selects from
// database db over conn, in order o, and says whether more matched.
func Read(ctx context.Context, conn judgements.Querier, db string, f Filter, o Order, limit int) (Result, error) {
	return judgements.Read(ctx, conn, db, f, o, limit)
}

// Late is how late f's batch is as of now, the one lateness the text and
// JSON listings show: for an open finding with a deadline, now -
// deadline, counted on past the recorded evaluation; otherwise the
// recorded lateness (for a resolved finding, how late the boundary came).
// A zero now keeps the recorded lateness (while open, as of EvidenceAsOf).
// Never negative: zero means not late (as-of before the deadline, or a
// kind without one).
func Late(f *detect.Finding, now time.Time) time.Duration {
	if countedTo(f, now) {
		return max(0, now.Sub(f.Deadline))
	}
	return max(0, f.Lateness)
}

// countedTo says whether Late counts f's lateness to now rather than
// giving the recorded one.
func countedTo(f *detect.Finding, now time.Time) bool {
	return f.State == StateOpen && !f.Deadline.IsZero() && !now.IsZero()
}

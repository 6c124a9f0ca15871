package serve

import (
	"context"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/findings"
)

// What the pages show of how a finding ended: the same words as the text
// listing of `handoff findings` (findings.Resolution), and the lateness it
// shows (findings.Late).

// EndedAs is how a resolved finding ended when not the plain way
// ("superseded by 20260919-r2", "on time, reported late by 3m"), "" else.
func (f Finding) EndedAs() string { return findings.Resolution(&f.Finding) }

// LateText is how late the batch is or was (counted to the request's time
// while open), "" when not late.
func (f Finding) LateText() string {
	if d := findings.Late(&f.Finding, f.AsOf); d > 0 {
		return replay.FormatDuration(d)
	}
	return ""
}

// DelayText is the reporting delay of a finding whose evidence was on time
// but reached the detector late, "" when none.
func (f Finding) DelayText() string {
	if f.ReportingDelay <= 0 {
		return ""
	}
	return replay.FormatDuration(f.ReportingDelay)
}

// dateFindings reads the findings of every attempt of k's date (k's own
// and its re-runs' or first attempt's), for the batch page: a superseded
// first attempt's findings say which attempt replaced it.
func (s *Server) dateFindings(ctx context.Context, k model.BatchKey) ([]Finding, error) {
	return s.findingsOf(ctx, findings.Filter{Pipelines: []string{k.Pipeline}, From: k.BusinessDate, To: k.BusinessDate})
}

package history

import (
	"context"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/judgements"
)

// Findings returns the latest stored record (highest seq) of every finding
// fingerprint whose batch has a business date on or after from, without
// its diagnosis: what the streaming detector needs to resume without
// publishing a record twice (detect.Detector.Restore). The SQL and the
// decoder are store/judgements' (argMax by seq, no FINAL); the findings
// come back as the analyzer's own.
func (s *Store) Findings(ctx context.Context, from model.Date) ([]detect.Finding, error) {
	res, err := judgements.Read(ctx, s.conn, s.db, judgements.Filter{From: from, Local: s.local}, judgements.Unordered, 0)
	return res.Findings, err
}

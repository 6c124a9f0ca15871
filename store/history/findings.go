package history

import (
	"context"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/findings"
)

// Findings returns the latest stored record (highest seq) of every finding
// fingerprint whose batch has a business date on or after from, without
// its diagnosis: what the streaming detector needs to resume without
// publishing a record twice (detect.Detector.Restore). The SQL is
// query/findings' (argMax by seq, no FINAL).
func (s *Store) Findings(ctx context.Context, from model.Date) ([]detect.Finding, error) {
	res, err := findings.Read(ctx, s.conn, s.db, findings.Filter{From: from, Local: s.local}, findings.Unordered, 0)
	if err != nil {
		return nil, err
	}
	out := make([]detect.Finding, 0, len(res.Findings))
	for i := range res.Findings {
		f := &res.Findings[i]
		d := detect.Finding{
			Fingerprint: f.Fingerprint, State: detect.State(f.State), Kind: detect.Kind(f.Kind), Name: f.Name,
			Batch: f.Key, Status: replay.Status(f.Status), Verdict: f.Verdict, Seq: int(f.Seq),
			RaisedAt: f.RaisedAt, EvidenceAsOf: f.EvidenceAsOf, Lateness: time.Duration(f.LatenessMs) * time.Millisecond,
			Severity: f.Severity, Owner: f.Owner,
		}
		if f.ResolvedAt != nil {
			d.ResolvedAt = *f.ResolvedAt
		}
		if f.Deadline != nil {
			d.Deadline = *f.Deadline
		}
		out = append(out, d)
	}
	return out, nil
}

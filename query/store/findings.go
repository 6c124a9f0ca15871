package store

import (
	"context"
	"fmt"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/model"
)

// Findings returns the latest stored record (highest seq) of every finding
// fingerprint whose batch has a business date on or after from, without
// its diagnosis: what the streaming detector needs to resume without
// publishing a record twice (detect.Detector.Restore). No FINAL: copies
// of a record share (fingerprint, seq), and argMax by seq reads the latest
// whether merges happened or not.
func (s *Store) Findings(ctx context.Context, from model.Date) ([]detect.Finding, error) {
	q := "SELECT pipeline, business_date, batch_id, fingerprint, max(seq), " +
		"argMax(toString(state), seq), argMax(kind, seq), argMax(name, seq), argMax(raised_ms, seq), " +
		"argMax(resolved_ms, seq), argMax(deadline_ms, seq), argMax(lateness_ms, seq), argMax(evidence_as_of_ms, seq), " +
		"argMax(status, seq), argMax(verdict, seq), argMax(severity, seq), argMax(owner, seq) " +
		"FROM " + s.db + "." + schema.Findings + " WHERE business_date >= toDate(?) " +
		"GROUP BY pipeline, business_date, batch_id, fingerprint"
	rows, err := s.conn.Query(ctx, q, from.String())
	if err != nil {
		return nil, fmt.Errorf("read findings from %s.%s: %w", s.db, schema.Findings, err)
	}
	defer rows.Close()
	var out []detect.Finding
	for rows.Next() {
		var (
			f                                    detect.Finding
			bd                                   time.Time
			seq                                  uint32
			state, kind, status                  string
			raised, resolved, deadline, late, ev int64
		)
		if err := rows.Scan(&f.Batch.Pipeline, &bd, &f.Batch.BatchID, &f.Fingerprint, &seq, &state, &kind, &f.Name,
			&raised, &resolved, &deadline, &late, &ev, &status, &f.Verdict, &f.Severity, &f.Owner); err != nil {
			return nil, fmt.Errorf("read findings from %s.%s: scan: %w", s.db, schema.Findings, err)
		}
		f.Batch.BusinessDate = model.Date{Year: bd.Year(), Month: bd.Month(), Day: bd.Day()}
		f.Seq = int(seq)
		f.State, f.Kind, f.Status = detect.State(state), detect.Kind(kind), replay.Status(status)
		f.RaisedAt = msTime(raised)
		f.ResolvedAt = msTime(resolved)
		f.Deadline = msTime(deadline)
		f.EvidenceAsOf = msTime(ev)
		f.Lateness = time.Duration(late) * time.Millisecond
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read findings from %s.%s: %w", s.db, schema.Findings, err)
	}
	return out, nil
}

// msTime is the time of a millisecond column, where 0 means none.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

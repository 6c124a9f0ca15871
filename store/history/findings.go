package history

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// restoreFindings is the read of Findings: of the latest record of each
// fingerprint, only what detect.Detector.Restore and the restore's log
// read, a dozen of the listings' twenty-three columns (store/judgements),
// which halved the server's time on 18.16 (2.1 s against 3.5 s for
// 250,000 findings, 2026-12-02). The kind and the name are part of the
// fingerprint, the same in every record of a finding: any() of them, not
// argMax. %s is the table, then what else the rows must satisfy
// (partitionsWhere).
const restoreFindings = "SELECT fingerprint, pipeline, business_date, batch_id, toString(argMax(state, seq)), any(kind), any(name), max(seq), " +
	"argMax(raised_ms, seq), argMax(resolved_ms, seq), argMax(deadline_ms, seq), argMax(status, seq), argMax(verdict, seq) FROM %s " +
	"WHERE business_date >= toDate(?)%s GROUP BY pipeline, business_date, batch_id, fingerprint"

// EventsPartitions selects the findings of Findings by the events topic's
// partition of their batch: those of the partitions Take among Count. The
// zero value selects every finding.
type EventsPartitions struct {
	Take  []int
	Count int
}

// partitionsWhere is the condition of restoreFindings that selects the
// records of the partitions of ps, and the records whose partition is not
// stored (0 of 0: published before the detector said it) or was taken
// among another count of partitions (the topic was given more since):
// the caller's keep tells those apart by their batch key. Every record of
// a batch of the partitions passes it, so the latest of each of their
// findings is read; of another batch some records may pass (the old ones
// without a partition), and keep drops them.
func partitionsWhere(ps EventsPartitions) (string, error) {
	if ps.Count <= 0 {
		return "", nil
	}
	w := " AND (events_partitions != " + strconv.Itoa(ps.Count)
	if len(ps.Take) > 0 {
		in := make([]string, len(ps.Take))
		for i, p := range ps.Take {
			if p < 0 || p >= ps.Count {
				return "", fmt.Errorf("store: partition %d of %d: want 0 to %d", p, ps.Count, ps.Count-1)
			}
			in[i] = strconv.Itoa(p) // integers, never request text
		}
		w += " OR events_partition IN (" + strings.Join(in, ", ") + ")"
	}
	return w + ")", nil
}

// Findings returns the latest stored record (highest seq) of every finding
// fingerprint whose batch has a business date on or after from, without
// its diagnosis and with only what the streaming detector needs to resume
// without publishing a record twice (detect.Detector.Restore): the
// fingerprint, batch, state, kind, name, seq, status, verdict and times
// (raised, resolved, deadline). No FINAL (argMax by seq), any order;
// decoded by schema.FindingRow.Tracked, the part of the one decoder of a
// stored finding (FindingRow.Finding) that the restore reads: no root, no
// diagnosis. They are handed to fn one by one as they are read, not
// collected: a detect.Finding takes 904 bytes, and after a fault the
// findings of the retention window number hundreds of thousands. The
// finding fn is given is overwritten by the next (fn copies what it
// keeps); an error from fn stops the read and is returned.
//
// ps selects, on the server, the findings of some partitions of the
// events topic (by the partition the detector stored with each record);
// keep, when not nil, selects the batches whose findings fn is given
// among what the server sends: the others are skipped before they are
// decoded. A detector taking over partitions gives both: ps for the
// records that say their partition, keep for those stored without it (a
// table of an earlier release, which also has no column for it: then
// every finding is read and keep alone selects).
func (s *Store) Findings(ctx context.Context, from model.Date, ps EventsPartitions, keep func(model.BatchKey) bool, fn func(*detect.Finding) error) error {
	name := schema.Findings
	if s.local {
		name += schema.LocalSuffix
	}
	table := s.db + "." + name
	cond, err := partitionsWhere(ps)
	if err != nil {
		return err
	}
	if cond != "" {
		has, err := schema.HasColumn(ctx, s.conn, s.db, name, "events_partitions")
		if err != nil {
			return err
		}
		if !has {
			cond = ""
		}
	}
	rows, err := s.conn.Query(ctx, fmt.Sprintf(restoreFindings, table, cond), from.String())
	if err != nil {
		return fmt.Errorf("read findings from %s: %w", table, err)
	}
	defer rows.Close()
	var (
		f                 detect.Finding // one, not one on the heap a row
		r                 schema.FindingRow
		pipeline, batchID string
		bd                time.Time
	)
	for rows.Next() {
		r = schema.FindingRow{}
		if err := rows.Scan(&r.Fingerprint, &pipeline, &bd, &batchID, &r.State, &r.Kind, &r.Name, &r.Seq,
			&r.RaisedMS, &r.ResolvedMS, &r.DeadlineMS, &r.Status, &r.Verdict); err != nil {
			return fmt.Errorf("read findings from %s: scan a finding: %w", table, err)
		}
		r.Key = model.BatchKey{Pipeline: pipeline, BusinessDate: schema.DateFromColumn(bd), BatchID: batchID}
		if keep != nil && !keep(r.Key) {
			continue
		}
		f = r.Tracked()
		if err := fn(&f); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read findings from %s: %w", table, err)
	}
	return nil
}

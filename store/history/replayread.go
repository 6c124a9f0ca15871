package history

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// The replay's read (EachBatchEvent with ReplayOnly) selects the columns
// of few values as their positions in lists it sends with the query, so
// that the server sends a number and the driver makes no string of them:
// the pipeline (among the names read), the type (model.EventTypes) and the
// system (replaySystems), with the text too only when it is not in the
// list. The driver's per-row strings, and the decoding of their lengths
// and bytes, were the largest part of a backfill's read (2026-12-01), and
// these three are a third of a row's text. The business date comes as its
// day number, which the driver scans without a time.Time.

// replaySystems are the systems the read sends as numbers.
var replaySystems = [...]model.System{model.Producer, model.Exchange, model.Consumer, model.Operator}

// replayRow is one row of the replay's read as the driver scans it.
type replayRow struct {
	pipe, typ, system             uint64 // 1-based positions; 0: not listed
	typText, systemText           string // the text when not listed
	days                          uint16
	ms                            int64
	hasRows, hasBytes, hasAttempt uint8
	e                             model.Event
	dest                          []any
}

func (r *replayRow) destinations() []any {
	if r.dest == nil {
		e := &r.e
		r.dest = []any{&r.pipe, &r.days, &e.BatchID, &e.ID, &r.typ, &r.typText, &r.ms, &r.system, &r.systemText,
			&e.Component, &e.Object, &e.Rows, &r.hasRows, &e.Bytes, &r.hasBytes, &e.Checksum, &e.Attempt, &r.hasAttempt, &e.Error}
	}
	return r.dest
}

// listed returns "[?, ?, ...]" for n values.
func listed(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + "]"
}

// eachReplayRow is EachBatchEvent for a ReplayOnly store: it reads the
// rows w selects of the pipelines sorted (sorted, without duplicates)
// with the columns above, and hands them to fn in the table's sort key
// order, each event_id once.
func (s *Store) eachReplayRow(ctx context.Context, sorted []string, w *where, fn func(model.Event) error) error {
	pipes, types, systems := listed(len(sorted)), listed(len(model.EventTypes)), listed(len(replaySystems))
	sql := "SELECT indexOf(" + pipes + ", pipeline), toUInt16(business_date), batch_id, event_id, " +
		"indexOf(" + types + ", type) AS t, if(t = 0, type, ''), time_ms, " +
		"indexOf(" + systems + ", system) AS s, if(s = 0, system, ''), " +
		"component, object, rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error FROM " + s.events() +
		" WHERE " + w.String()
	args := make([]any, 0, len(sorted)+len(model.EventTypes)+len(replaySystems)+len(w.args))
	for _, p := range sorted {
		args = append(args, p)
	}
	for _, t := range model.EventTypes {
		args = append(args, string(t))
	}
	for _, sy := range replaySystems {
		args = append(args, string(sy))
	}
	args = append(args, w.args...)

	rows, err := s.conn.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	defer rows.Close()
	var (
		r        replayRow
		rb       rowBlocks
		lastDays uint16
		lastDate model.Date
	)
	dest := r.destinations()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read events from %s: scan %s row: %w", s.events(), "events", err)
		}
		e := &r.e
		if r.pipe == 0 || r.pipe > uint64(len(sorted)) {
			return fmt.Errorf("read events from %s: a row of a pipeline the query did not ask for", s.events())
		}
		e.Pipeline = sorted[r.pipe-1]
		e.Spec = model.SpecV1
		if r.typ > 0 && r.typ <= uint64(len(model.EventTypes)) {
			e.Type = model.EventTypes[r.typ-1]
		} else {
			e.Type = model.EventType(r.typText)
		}
		if r.system > 0 && r.system <= uint64(len(replaySystems)) {
			e.System = replaySystems[r.system-1]
		} else {
			e.System = model.System(r.systemText)
		}
		e.Time = time.UnixMilli(r.ms).UTC()
		e.HasRows, e.HasBytes, e.HasAttempt = r.hasRows != 0, r.hasBytes != 0, r.hasAttempt != 0
		// Rows come in runs of one date: the conversion once a run.
		if r.days != lastDays || rb.n == 0 {
			lastDays, lastDate = r.days, dateOfDays(r.days)
		}
		e.BusinessDate = lastDate
		rb.add(e, r.pipe-1)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	rows.Close()
	return rb.emit(fn)
}

// dateOfDays is the business date of a Date column's day number, as
// schema.DateFromColumn gives it: day 0 (1970-01-01, what a row without a
// business date stores) is the zero Date.
func dateOfDays(days uint16) model.Date {
	if days == 0 {
		return model.Date{}
	}
	return model.DateFromDays(int(days))
}

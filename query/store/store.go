// Package store reads delivery events back from ClickHouse, for diagnose,
// backfill and the query side.
//
// Reads do not use FINAL: its per-partition merge needs memory for every
// partition a read touches, and a few hundred valid events with business
// dates far apart made every read fail on ClickHouse's memory limit (issue
// 6). Instead rows come in the table's sort key order (pipeline,
// business_date, batch_id, event_id), where the copies of an event that
// merges have not collapsed yet are adjacent and are skipped as they pass;
// and a large range is read in windows of business dates, each one query
// whose sort fits in bounded memory.
package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/model"
)

// Filter selects events. Pipeline is required unless Batch is set. From and
// To bound business_date inclusively; a zero Date leaves that side open.
//
// Heartbeats (process.heartbeat) have no business date; they are returned
// only when Heartbeats is set, for the same pipeline, and then From and To
// bound their event time (UTC days) instead.
type Filter struct {
	Pipeline   string
	Batch      *model.BatchKey
	From, To   model.Date
	Heartbeats bool
}

// DefaultWindowRows is how many stored rows one read query covers at most,
// unless a single business date holds more: ClickHouse sorts a window in
// memory, so this bounds the server's memory per read, whatever the range.
const DefaultWindowRows = 200_000

// Store reads one handoff database.
type Store struct {
	conn driver.Conn
	db   string
	// WindowRows overrides DefaultWindowRows when positive.
	WindowRows int
}

// New returns a Store reading database db over conn. db is checked by
// schema.CheckDatabase, the one validator of names that reach SQL.
func New(conn driver.Conn, db string) (*Store, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return nil, err
	}
	return &Store{conn: conn, db: db}, nil
}

const selectColumns = "pipeline, business_date, batch_id, event_id, spec, type, time_ms, system, component, object, " +
	"rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error, `attrs.key`, `attrs.value`"

// orderBy is the table's sort key: reading in it keeps a batch's rows
// together, batches in key order, and copies of an event adjacent.
const orderBy = " ORDER BY pipeline, business_date, batch_id, event_id"

// query is one SELECT with its arguments.
type query struct {
	sql  string
	args []any
}

// where is a conjunction of conditions with their arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) String() string { return strings.Join(w.conds, " AND ") }

// batchWhere selects the batch events of pipeline in [from, to].
func batchWhere(pipeline string, from, to model.Date) *where {
	w := &where{}
	w.add("pipeline = ?", pipeline)
	w.add("batch_id != ''")
	if !from.IsZero() {
		w.add("business_date >= toDate(?)", from.String())
	}
	if !to.IsZero() {
		w.add("business_date <= toDate(?)", to.String())
	}
	return w
}

func (s *Store) selectWhere(w *where) query {
	return query{sql: "SELECT " + selectColumns + " FROM " + s.db + ".events WHERE " + w.String() + orderBy, args: w.args}
}

// plan returns the queries that read f, in output order: the heartbeats,
// then the batch events in windows of business dates.
func (s *Store) plan(ctx context.Context, f Filter) ([]query, error) {
	if f.Batch != nil {
		if f.Pipeline != "" && f.Pipeline != f.Batch.Pipeline {
			return nil, fmt.Errorf("store filter: pipeline %q and batch %s disagree: give one or make them agree", f.Pipeline, f.Batch)
		}
		w := &where{}
		w.add("pipeline = ?", f.Batch.Pipeline)
		w.add("business_date = toDate(?)", f.Batch.BusinessDate.String())
		w.add("batch_id = ?", f.Batch.BatchID)
		return []query{s.selectWhere(w)}, nil
	}
	if f.Pipeline == "" {
		return nil, fmt.Errorf("store filter: a pipeline or a batch is required")
	}
	var out []query
	if f.Heartbeats {
		w := &where{}
		w.add("pipeline = ?", f.Pipeline)
		w.add("batch_id = ''")
		w.add("type = 'process.heartbeat'")
		if !f.From.IsZero() {
			w.add("time_ms >= ?", f.From.In(time.UTC).UnixMilli())
		}
		if !f.To.IsZero() {
			w.add("time_ms < ?", f.To.AddDays(1).In(time.UTC).UnixMilli())
		}
		out = append(out, s.selectWhere(w))
	}
	windows, err := s.windows(ctx, f)
	if err != nil {
		return nil, err
	}
	for _, win := range windows {
		out = append(out, s.selectWhere(batchWhere(f.Pipeline, win[0], win[1])))
	}
	return out, nil
}

// windows cuts the business dates of f's batch events into consecutive
// ranges of at most WindowRows stored rows (a date with more is a window of
// its own). Counting by date reads only the primary key.
func (s *Store) windows(ctx context.Context, f Filter) ([][2]model.Date, error) {
	limit := uint64(s.WindowRows)
	if limit == 0 {
		limit = DefaultWindowRows
	}
	w := batchWhere(f.Pipeline, f.From, f.To)
	rows, err := s.conn.Query(ctx, "SELECT business_date, count() FROM "+s.db+".events WHERE "+w.String()+
		" GROUP BY business_date ORDER BY business_date", w.args...)
	if err != nil {
		return nil, fmt.Errorf("plan the read of %s.events: %w", s.db, err)
	}
	defer rows.Close()
	var (
		out  [][2]model.Date
		n    uint64
		bd   time.Time
		rowN uint64
	)
	for rows.Next() {
		if err := rows.Scan(&bd, &rowN); err != nil {
			return nil, fmt.Errorf("plan the read of %s.events: scan: %w", s.db, err)
		}
		d := model.Date{Year: bd.Year(), Month: bd.Month(), Day: bd.Day()}
		if len(out) == 0 || n+rowN > limit {
			out = append(out, [2]model.Date{d, d})
			n = 0
		}
		out[len(out)-1][1] = d
		n += rowN
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("plan the read of %s.events: %w", s.db, err)
	}
	return out, nil
}

// Events returns the events the filter selects, each event_id once, in
// the table's sort key order: heartbeats first, then by business date,
// batch id and event id.
func (s *Store) Events(ctx context.Context, f Filter) ([]model.Event, error) {
	var out []model.Event
	err := s.EachEvent(ctx, f, func(e model.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// EachEvent streams the events the filter selects to fn, in the order of
// Events, holding one window's rows at most (on the server; here one row).
// An error from fn stops the read and is returned.
func (s *Store) EachEvent(ctx context.Context, f Filter, fn func(model.Event) error) error {
	qs, err := s.plan(ctx, f)
	if err != nil {
		return err
	}
	var prev rowKey
	for _, q := range qs {
		if err := s.each(ctx, q, &prev, fn); err != nil {
			return err
		}
	}
	return nil
}

// rowKey is a row's sort key: copies of one event share it.
type rowKey struct {
	pipeline, batchID, eventID string
	businessDate               int64 // Unix seconds
}

func (s *Store) each(ctx context.Context, q query, prev *rowKey, fn func(model.Event) error) error {
	rows, err := s.conn.Query(ctx, q.sql, q.args...)
	if err != nil {
		return fmt.Errorf("read events from %s.events: %w", s.db, err)
	}
	defer rows.Close()
	var (
		bd                            time.Time
		typ, system                   string
		hasRows, hasBytes, hasAttempt uint8
		keys, vals                    []string
		ms                            int64
	)
	for rows.Next() {
		var e model.Event
		keys, vals = keys[:0], vals[:0]
		if err := rows.Scan(&e.Pipeline, &bd, &e.BatchID, &e.ID, &e.Spec, &typ, &ms, &system, &e.Component, &e.Object,
			&e.Rows, &hasRows, &e.Bytes, &hasBytes, &e.Checksum, &e.Attempt, &hasAttempt, &e.Error, &keys, &vals); err != nil {
			return fmt.Errorf("read events from %s.events: scan: %w", s.db, err)
		}
		k := rowKey{pipeline: e.Pipeline, batchID: e.BatchID, eventID: e.ID, businessDate: bd.Unix()}
		if k == *prev {
			continue // a copy merges have not collapsed yet
		}
		*prev = k
		e.Time = time.UnixMilli(ms).UTC()
		e.Type = model.EventType(typ)
		e.System = model.System(system)
		e.HasRows, e.HasBytes, e.HasAttempt = hasRows != 0, hasBytes != 0, hasAttempt != 0
		if bd.Year() != 1970 || bd.YearDay() != 1 {
			e.BusinessDate = model.Date{Year: bd.Year(), Month: bd.Month(), Day: bd.Day()}
		}
		if len(keys) > 0 {
			e.Attrs = make(map[string]string, len(keys))
			for i, k := range keys {
				if i < len(vals) {
					e.Attrs[k] = vals[i]
				}
			}
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events from %s.events: %w", s.db, err)
	}
	return nil
}

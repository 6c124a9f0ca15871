// Package store reads delivery events back from ClickHouse: diagnose
// --clickhouse today, backfill and the query side next.
//
// Reads do not use FINAL: its per-partition merge needs memory for every
// partition a read touches, and a few hundred valid events with business
// dates far apart made every read fail on ClickHouse's memory limit (issue
// 6). Instead rows come in the table's sort key order (pipeline,
// business_date, batch_id, event_id), where the copies of an event that
// merges have not collapsed yet are adjacent and are skipped as they pass;
// and a large range is read in windows of dates (business dates; for
// heartbeats, days), each one query whose sort fits in bounded memory.
package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/model"
)

// Filter selects events. Pipeline is required unless Batch is set or both
// From and To are: a bounded range of business dates may be read for every
// pipeline at once (the serve pages' all-pipelines day). From and To bound
// business_date inclusively; a zero Date leaves that side open.
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
	if pipeline != "" {
		w.add("pipeline = ?", pipeline)
	}
	w.add("batch_id != ''")
	if !from.IsZero() {
		w.add("business_date >= toDate(?)", from.String())
	}
	if !to.IsZero() {
		w.add("business_date <= toDate(?)", to.String())
	}
	return w
}

// selectWhere reads what w selects, ordered by dateCol, pipeline, batch id
// and event id: for batch events (business_date) of one pipeline that is the
// table's sort key, so a batch's rows are consecutive and batches come in
// key order; for heartbeats (event_date) it is by day. Either way the
// copies of an event are adjacent.
func (s *Store) selectWhere(w *where, dateCol string) query {
	return query{sql: "SELECT " + schema.EventReadColumns + " FROM " + s.db + "." + schema.Events + " WHERE " + w.String() +
		" ORDER BY " + dateCol + ", pipeline, batch_id, event_id", args: w.args}
}

// plan returns the queries that read f, in output order: the heartbeats
// in windows of days, then the batch events in windows of business dates.
func (s *Store) plan(ctx context.Context, f Filter) ([]query, error) {
	if f.Batch != nil {
		if f.Pipeline != "" && f.Pipeline != f.Batch.Pipeline {
			return nil, fmt.Errorf("store filter: pipeline %q and batch %s disagree: give one or make them agree", f.Pipeline, f.Batch)
		}
		w := &where{}
		w.add("pipeline = ?", f.Batch.Pipeline)
		w.add("business_date = toDate(?)", f.Batch.BusinessDate.String())
		w.add("batch_id = ?", f.Batch.BatchID)
		return []query{s.selectWhere(w, "business_date")}, nil
	}
	if f.Pipeline == "" && (f.From.IsZero() || f.To.IsZero() || f.Heartbeats) {
		return nil, fmt.Errorf("store filter: a pipeline or a batch is required (or, without heartbeats, both From and To)")
	}
	var out []query
	if f.Heartbeats {
		w := &where{}
		w.add("pipeline = ?", f.Pipeline)
		// Heartbeats are stored with the zero business date (schema.sql):
		// saying so prunes every other partition.
		w.add("business_date = toDate('1970-01-01')")
		w.add("batch_id = ''")
		w.add("type = 'process.heartbeat'")
		if !f.From.IsZero() {
			w.add("time_ms >= ?", f.From.In(time.UTC).UnixMilli())
		}
		if !f.To.IsZero() {
			w.add("time_ms < ?", f.To.AddDays(1).In(time.UTC).UnixMilli())
		}
		// Heartbeats share one business date (none): window them by the
		// UTC day of their time, which the copies of one share too.
		qs, err := s.windowed(ctx, w, "event_date")
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	qs, err := s.windowed(ctx, batchWhere(f.Pipeline, f.From, f.To), "business_date")
	if err != nil {
		return nil, err
	}
	return append(out, qs...), nil
}

// windowed returns the queries that read what w selects in windows of
// dateCol (a Date column): consecutive ranges of dates of at most
// WindowRows stored rows each (a date with more is a window of its own),
// in date order. Counting by business_date reads only the primary key;
// by event_date, one column of the selected rows.
func (s *Store) windowed(ctx context.Context, w *where, dateCol string) ([]query, error) {
	limit := uint64(s.WindowRows)
	if limit == 0 {
		limit = DefaultWindowRows
	}
	rows, err := s.conn.Query(ctx, "SELECT "+dateCol+", count() FROM "+s.db+".events WHERE "+w.String()+
		" GROUP BY "+dateCol+" ORDER BY "+dateCol, w.args...)
	if err != nil {
		return nil, fmt.Errorf("plan the read of %s.events: %w", s.db, err)
	}
	defer rows.Close()
	var (
		windows [][2]string
		n, c    uint64
		d       time.Time
	)
	for rows.Next() {
		if err := rows.Scan(&d, &c); err != nil {
			return nil, fmt.Errorf("plan the read of %s.events: scan: %w", s.db, err)
		}
		day := d.Format(time.DateOnly)
		if len(windows) == 0 || n+c > limit {
			windows = append(windows, [2]string{day, day})
			n = 0
		}
		windows[len(windows)-1][1] = day
		n += c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("plan the read of %s.events: %w", s.db, err)
	}
	out := make([]query, 0, len(windows))
	for _, win := range windows {
		ww := &where{conds: slices.Clone(w.conds), args: slices.Clone(w.args)}
		ww.add(dateCol+" >= toDate(?)", win[0])
		ww.add(dateCol+" <= toDate(?)", win[1])
		out = append(out, s.selectWhere(ww, dateCol))
	}
	return out, nil
}

// Events returns the events the filter selects, each event_id once:
// heartbeats first (by UTC day, then event id), then the batch events in
// the order (business date, pipeline, batch id, event id), so that
// a batch's events are consecutive and batches come in key order.
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
	businessDate               model.Date
}

func (s *Store) each(ctx context.Context, q query, prev *rowKey, fn func(model.Event) error) error {
	rows, err := s.conn.Query(ctx, q.sql, q.args...)
	if err != nil {
		return fmt.Errorf("read events from %s.events: %w", s.db, err)
	}
	defer rows.Close()
	var sc schema.EventScanner
	for rows.Next() {
		var e model.Event
		if err := sc.Scan(rows, &e); err != nil {
			return fmt.Errorf("read events from %s.events: %w", s.db, err)
		}
		k := rowKey{pipeline: e.Pipeline, batchID: e.BatchID, eventID: e.ID, businessDate: e.BusinessDate}
		if k == *prev {
			continue // a copy merges have not collapsed yet
		}
		*prev = k
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events from %s.events: %w", s.db, err)
	}
	return nil
}

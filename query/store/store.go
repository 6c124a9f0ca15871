// Package store reads delivery events back from ClickHouse, for diagnose,
// backfill and the query side. Reads use FINAL, so an event delivered
// several times is returned once, whatever merges have happened.
package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

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

// Store reads one handoff database.
type Store struct {
	conn driver.Conn
	db   string
}

// New returns a Store reading database db over conn.
func New(conn driver.Conn, db string) *Store { return &Store{conn: conn, db: db} }

const selectColumns = "pipeline, business_date, batch_id, event_id, spec, type, time_ms, system, component, object, " +
	"rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error, `attrs.key`, `attrs.value`"

func (s *Store) query(f Filter) (string, []any, error) {
	var where []string
	var args []any
	pipeline := f.Pipeline
	if f.Batch != nil {
		if pipeline != "" && pipeline != f.Batch.Pipeline {
			return "", nil, fmt.Errorf("store filter: pipeline %q and batch %s disagree", pipeline, f.Batch)
		}
		pipeline = f.Batch.Pipeline
	}
	if pipeline == "" {
		return "", nil, fmt.Errorf("store filter: a pipeline or a batch is required")
	}
	where = append(where, "pipeline = ?")
	args = append(args, pipeline)
	var batchCond []string
	if f.Batch != nil {
		batchCond = append(batchCond, "business_date = toDate(?)", "batch_id = ?")
		args = append(args, f.Batch.BusinessDate.String(), f.Batch.BatchID)
	} else {
		batchCond = append(batchCond, "batch_id != ''")
	}
	if !f.From.IsZero() {
		batchCond = append(batchCond, "business_date >= toDate(?)")
		args = append(args, f.From.String())
	}
	if !f.To.IsZero() {
		batchCond = append(batchCond, "business_date <= toDate(?)")
		args = append(args, f.To.String())
	}
	cond := "(" + strings.Join(batchCond, " AND ") + ")"
	if f.Heartbeats {
		hb := []string{"type = 'process.heartbeat'", "batch_id = ''"}
		if !f.From.IsZero() {
			hb = append(hb, "time_ms >= ?")
			args = append(args, f.From.In(time.UTC).UnixMilli())
		}
		if !f.To.IsZero() {
			hb = append(hb, "time_ms < ?")
			args = append(args, f.To.AddDays(1).In(time.UTC).UnixMilli())
		}
		cond = "(" + cond + " OR (" + strings.Join(hb, " AND ") + "))"
	}
	where = append(where, cond)
	q := "SELECT " + selectColumns + " FROM " + s.db + ".events FINAL WHERE " + strings.Join(where, " AND ") +
		" ORDER BY business_date, batch_id, time_ms, event_id"
	return q, args, nil
}

// Events returns the events the filter selects, each event_id once, in
// order of business date, batch id, time and event id.
func (s *Store) Events(ctx context.Context, f Filter) ([]model.Event, error) {
	var out []model.Event
	err := s.EachEvent(ctx, f, func(e model.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// EachEvent streams the events the filter selects to fn, in the order of
// Events, without holding them all in memory. An error from fn stops the
// read and is returned.
func (s *Store) EachEvent(ctx context.Context, f Filter, fn func(model.Event) error) error {
	q, args, err := s.query(f)
	if err != nil {
		return err
	}
	rows, err := s.conn.Query(ctx, q, args...)
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

package history

import (
	"context"
	"fmt"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// An unordered all-pipelines read (Filter.Unordered, ReplayOnly: the serve
// grid's days across every pipeline) has the server send each row in the
// form the driver scans cheapest. The driver makes a string (and boxes it)
// for every String cell: at 10,000 pipelines a day is 100,000 rows of
// nine strings, and scanning them was the largest part of the page's CPU.
// So:
//   - the text columns of the row come in one String (dayText), with the
//     lengths of its parts two to a UInt64, so that a row is one string
//     and the event's strings are pieces of it; a type or system of the
//     known ones becomes its constant (no piece kept). Sending type and
//     system as their positions in a list instead (indexOf) cost
//     ClickHouse a third more CPU than the whole read;
//   - the business date comes as its day number, scanned without a
//     time.Time.
//
// The events are those the plain columns give, field for field.
const dayText = "concat(pipeline, batch_id, event_id, component, object, checksum, error, type, system)"

// dayLens are the lengths of dayText's first eight parts, two to a number
// (the first in the high half); the ninth is what is left.
const dayLens = "bitShiftLeft(length(pipeline), 32) + length(batch_id), bitShiftLeft(length(event_id), 32) + length(component), " +
	"bitShiftLeft(length(object), 32) + length(checksum), bitShiftLeft(length(error), 32) + length(type)"

// selectDay is the query of an unordered read of the batch events w
// selects from table, in dayRow's columns.
func selectDay(table string, w *where) query {
	return query{sql: "SELECT toUInt16(business_date), time_ms, rows, has_rows, bytes, has_bytes, attempt, has_attempt, " +
		dayLens + ", " + dayText + " FROM " + table + " WHERE " + w.String(), args: w.args, day: true}
}

// systemOf is s as its constant when it is a known system.
func systemOf(s string) model.System {
	switch model.System(s) {
	case model.Producer:
		return model.Producer
	case model.Exchange:
		return model.Exchange
	case model.Consumer:
		return model.Consumer
	case model.Operator:
		return model.Operator
	}
	return model.System(s)
}

// dayRow is one row of selectDay as the driver scans it.
type dayRow struct {
	days                          uint16
	ms                            int64
	hasRows, hasBytes, hasAttempt uint8
	lens                          [4]uint64
	text                          string
	e                             model.Event
	dest                          []any
}

func (r *dayRow) destinations() []any {
	if r.dest == nil {
		e := &r.e
		r.dest = []any{&r.days, &r.ms, &e.Rows, &r.hasRows, &e.Bytes, &r.hasBytes, &e.Attempt, &r.hasAttempt,
			&r.lens[0], &r.lens[1], &r.lens[2], &r.lens[3], &r.text}
	}
	return r.dest
}

// event fills r.e from the row scanned; false when the text's length
// disagrees with its parts'.
func (r *dayRow) event(lastDays uint16, lastDate model.Date) bool {
	var parts [9]string
	rest := r.text
	for i := range 8 {
		n := r.lens[i/2] & 0xffffffff
		if i%2 == 0 {
			n = r.lens[i/2] >> 32
		}
		if n > uint64(len(rest)) {
			return false
		}
		parts[i], rest = rest[:n], rest[n:]
	}
	parts[8] = rest
	e := &r.e
	e.Spec = model.SpecV1
	e.Pipeline, e.BatchID, e.ID, e.Component, e.Object, e.Checksum, e.Error = parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6]
	// The known type and system as their constants, so that no event
	// keeps its row's text for them.
	if e.Type = model.EventType(parts[7]); e.Type.Index() >= 0 {
		e.Type = model.EventTypes[e.Type.Index()]
	}
	e.System = systemOf(parts[8])
	e.Time = time.UnixMilli(r.ms).UTC()
	e.HasRows, e.HasBytes, e.HasAttempt = r.hasRows != 0, r.hasBytes != 0, r.hasAttempt != 0
	if r.days == lastDays {
		e.BusinessDate = lastDate
	} else {
		e.BusinessDate = dateOfDay(r.days)
	}
	return true
}

// dateOfDay is the business date of a Date column's day number, as
// schema.DateFromColumn gives it: day 0 is the zero Date.
func dateOfDay(days uint16) model.Date {
	if days == 0 {
		return model.Date{}
	}
	return model.DateFromDays(int(days))
}

// eachDay is each for a query of selectDay.
func (s *Store) eachDay(ctx context.Context, q query, prev *rowKey, fn func(*model.Event) error) error {
	rows, err := s.conn.Query(ctx, q.sql, q.args...)
	if err != nil {
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	defer rows.Close()
	var (
		r        dayRow
		lastDays uint16
		lastDate model.Date
	)
	dest := r.destinations()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read events from %s: scan row: %w", s.events(), err)
		}
		if !r.event(lastDays, lastDate) {
			return fmt.Errorf("read events from %s: a row whose text is %d bytes, not the %v its parts' lengths say", s.events(), len(r.text), r.lens)
		}
		e := &r.e
		lastDays, lastDate = r.days, e.BusinessDate
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
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	return nil
}

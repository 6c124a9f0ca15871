package history

import (
	"context"
	"fmt"

	"github.com/handoff-dev/handoff/model"
)

// An unordered all-pipelines read (Filter.Unordered, ReplayOnly: the serve
// grid's days across every pipeline) has the server send each row as the
// replay's read does (replayColumns): at 10,000 pipelines a day is 100,000
// rows of nine strings, and the driver's string of every String cell was
// the largest part of the page's CPU. Sending type and system as their
// positions in a list instead (indexOf) cost ClickHouse a third more CPU
// than the whole read. The events are those the plain columns give, field
// for field.

// selectDay is the query of an unordered read of the batch events w
// selects from table, in replayRow's columns.
func selectDay(table string, w *where) query {
	return query{sql: "SELECT " + replayColumns + " FROM " + table + " WHERE " + w.String(), args: w.args, day: true}
}

// eachDay is each for a query of selectDay.
func (s *Store) eachDay(ctx context.Context, q query, prev *rowKey, fn func(*model.Event) error) error {
	rows, err := s.conn.Query(ctx, q.sql, q.args...)
	if err != nil {
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	defer rows.Close()
	var (
		r        replayRow
		dayFlags uint64
		parts    [replayParts]string
		e        model.Event
		lastDays uint16
		lastDate model.Date
	)
	dest := r.destinations(&dayFlags)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read events from %s: scan row: %w", s.events(), err)
		}
		r.unpack(dayFlags)
		if !r.split(&parts) {
			return fmt.Errorf("read events from %s: a row of %d bytes of text, shorter than its parts' lengths %x say", s.events(), len(r.text), r.lens)
		}
		// Rows come in runs of one date: the conversion once a run.
		if r.days != lastDays {
			lastDays, lastDate = r.days, dateOfDays(r.days)
		}
		r.event(&e, &parts, parts[0], lastDate)
		k := rowKey{pipeline: e.Pipeline, batchID: e.BatchID, eventID: e.ID, businessDate: e.BusinessDate}
		if k == *prev {
			continue // a copy merges have not collapsed yet
		}
		*prev = k
		if err := fn(&e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	return nil
}

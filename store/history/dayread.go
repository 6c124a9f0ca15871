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
		sc replayScan
		e  model.Event
	)
	for rows.Next() {
		if err := sc.next(rows, s.events()); err != nil {
			return err
		}
		sc.r.event(&e, &sc.parts, sc.parts[0], sc.date)
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

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
	// The table's name once: s.events() builds it anew, and a call a
	// row was a twentieth of a 10,000-pipeline day page's CPU.
	table := s.events()
	rows, err := s.conn.Query(ctx, q.sql, q.args...)
	if err != nil {
		return fmt.Errorf("read events from %s: %w", table, err)
	}
	defer rows.Close()
	var (
		sc replayScan
		e  model.Event
		// pipeline is the name of the run of rows of one pipeline, as
		// the run's first row has it: each row's is a piece of its own
		// text, and every comparison of names after the read (the
		// copies' here, the fold's, the census', the contracts') then
		// compared them byte by byte; the same string compares at once.
		pipeline string
	)
	for rows.Next() {
		if err := sc.next(rows, table); err != nil {
			return err
		}
		if sc.parts[0] != pipeline {
			pipeline = sc.parts[0]
		}
		sc.r.event(&e, &sc.parts, pipeline, sc.date)
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
		return fmt.Errorf("read events from %s: %w", table, err)
	}
	return nil
}

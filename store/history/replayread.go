package history

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// The replay's read (EachBatchEvent with ReplayOnly) has the server send
// a row in the form the driver scans cheapest. The driver makes a string
// of every String cell, and those strings, with the decoding of their
// lengths, were the largest part of a backfill's read (2026-12-01). So
// every text column of a row comes in one String (concat), with the
// lengths of its parts two to a UInt64: a row is one string, which the
// event's strings are pieces of, and the pipeline, type and system, of
// few values, become the one copy of their name here instead. The
// business date comes as its day number, which the driver scans without
// a time.Time. On the server the concat and the lengths cost less than a
// lookup of the names there (transform or indexOf of a list sent with
// the query).
const (
	replayText    = "concat(pipeline, batch_id, event_id, type, system, component, object, checksum, error)"
	replayLengths = "bitOr(bitShiftLeft(length(pipeline), 32), length(batch_id)), bitOr(bitShiftLeft(length(event_id), 32), length(type)), " +
		"bitOr(bitShiftLeft(length(system), 32), length(component)), bitOr(bitShiftLeft(length(object), 32), length(checksum))"
	replayColumns = "toUInt16(business_date), time_ms, rows, has_rows, bytes, has_bytes, attempt, has_attempt, " + replayLengths + ", " + replayText
)

// replayParts is the number of parts of replayText.
const replayParts = 9

// replayRow is one row of the replay's read as the driver scans it.
type replayRow struct {
	days                          uint16
	ms                            int64
	hasRows, hasBytes, hasAttempt uint8
	// lens holds the lengths of replayText's parts but the last, two to
	// a number (the first in the high half).
	lens [4]uint64
	text string
	e    model.Event
	dest []any
}

func (r *replayRow) destinations() []any {
	if r.dest == nil {
		e := &r.e
		r.dest = []any{&r.days, &r.ms, &e.Rows, &r.hasRows, &e.Bytes, &r.hasBytes, &e.Attempt, &r.hasAttempt,
			&r.lens[0], &r.lens[1], &r.lens[2], &r.lens[3], &r.text}
	}
	return r.dest
}

// split cuts r.text into the parts of replayText; false when the lengths
// do not fit the text.
func (r *replayRow) split(parts *[replayParts]string) bool {
	rest := r.text
	for i := range replayParts - 1 {
		n := r.lens[i/2] >> 32
		if i%2 == 1 {
			n = r.lens[i/2] & 0xffffffff
		}
		if n > uint64(len(rest)) {
			return false
		}
		parts[i], rest = rest[:n], rest[n:]
	}
	parts[replayParts-1] = rest
	return true
}

// eventType returns t as the constant of a known type, so that the event
// holds no piece of the row's text for it; t itself when unknown.
func eventType(t string) model.EventType {
	if i := model.EventType(t).Index(); i >= 0 {
		return model.EventTypes[i]
	}
	return model.EventType(t)
}

// system returns s as the constant of a v1 system; s itself otherwise.
func system(s string) model.System {
	for _, k := range [...]model.System{model.Producer, model.Exchange, model.Consumer, model.Operator} {
		if string(k) == s {
			return k
		}
	}
	return model.System(s)
}

// eachReplayRow is EachBatchEvent for a ReplayOnly store: it reads the
// rows w selects of the pipelines sorted (sorted, without duplicates)
// with the columns above, and hands them to fn in the table's sort key
// order, each event_id once.
func (s *Store) eachReplayRow(ctx context.Context, sorted []string, w *where, fn func(model.Event) error) error {
	rows, err := s.conn.Query(ctx, "SELECT "+replayColumns+" FROM "+s.events()+" WHERE "+w.String(), w.args...)
	if err != nil {
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	defer rows.Close()
	var (
		r        replayRow
		rb       rowBlocks
		parts    [replayParts]string
		lastDays uint16
		lastDate model.Date
		lastName string // the pipeline of the row before: rows come in runs of one
		lastRank int
	)
	dest := r.destinations()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read events from %s: scan %s row: %w", s.events(), "events", err)
		}
		if !r.split(&parts) {
			return fmt.Errorf("read events from %s: a row of %d bytes of text, shorter than its parts' lengths %x say", s.events(), len(r.text), r.lens)
		}
		e := &r.e
		if parts[0] != lastName || rb.n == 0 {
			i, ok := slices.BinarySearch(sorted, parts[0])
			if !ok {
				return fmt.Errorf("read events from %s: a row of pipeline %q, which the query did not ask for", s.events(), parts[0])
			}
			lastName, lastRank = sorted[i], i
		}
		e.Pipeline = sorted[lastRank]
		e.BatchID, e.ID, e.Component, e.Object, e.Checksum, e.Error = parts[1], parts[2], parts[5], parts[6], parts[7], parts[8]
		e.Spec, e.Type, e.System = model.SpecV1, eventType(parts[3]), system(parts[4])
		e.Time = time.UnixMilli(r.ms).UTC()
		e.HasRows, e.HasBytes, e.HasAttempt = r.hasRows != 0, r.hasBytes != 0, r.hasAttempt != 0
		// Rows come in runs of one date: the conversion once a run.
		if r.days != lastDays || rb.n == 0 {
			lastDays, lastDate = r.days, dateOfDays(r.days)
		}
		e.BusinessDate = lastDate
		rb.add(e, uint64(lastRank))
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

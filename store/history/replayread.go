package history

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

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
	// replayDayFlags is the business date's day number with the has_*
	// flags above it (bits 16, 17 and 18), a cell where four cost the
	// driver four scans a row.
	replayDayFlags = "bitOr(bitShiftLeft(toUInt64((has_rows != 0) + 2 * (has_bytes != 0) + 4 * (has_attempt != 0)), 16), toUInt16(business_date))"
	replayColumns  = replayDayFlags + ", time_ms, rows, bytes, attempt, " + replayLengths + ", " + replayText
)

// replayParts is the number of parts of replayText.
const replayParts = 9

// replayRow is one row of the replay's read, as the driver scans it and
// as rowBlocks keeps it until the rows are sorted: 128 bytes, where the
// event it becomes is 264.
type replayRow struct {
	// text is replayText; batchID and id are pieces of it.
	text, batchID, id string
	// lens holds the lengths of replayText's parts but the last, two to
	// a number (the first in the high half).
	lens                          [4]uint64
	ms, rows, bytes, attempt      int64
	rank                          uint32 // the pipeline's, among the names read
	days                          uint16
	hasRows, hasBytes, hasAttempt uint8
}

// destinations returns where the driver scans a row: into r, but for
// replayDayFlags, into dayFlags (unpack sets r's fields from it).
func (r *replayRow) destinations(dayFlags *uint64) []any {
	return []any{dayFlags, &r.ms, &r.rows, &r.bytes, &r.attempt, &r.lens[0], &r.lens[1], &r.lens[2], &r.lens[3], &r.text}
}

// unpack sets r's business date and flags from replayDayFlags.
func (r *replayRow) unpack(dayFlags uint64) {
	r.days = uint16(dayFlags)
	r.hasRows, r.hasBytes, r.hasAttempt = uint8(dayFlags>>16&1), uint8(dayFlags>>17&1), uint8(dayFlags>>18&1)
}

// split cuts r.text into the parts of replayText; false when the lengths
// do not fit the text. Pair by pair: the loop over the parts with the
// halves picked by index was a tenth of a backfill's read (2026-12-02).
func (r *replayRow) split(parts *[replayParts]string) bool {
	rest := r.text
	for j, l := range r.lens {
		a, b := l>>32, l&0xffffffff
		if a+b > uint64(len(rest)) {
			return false
		}
		parts[2*j], parts[2*j+1], rest = rest[:a], rest[a:a+b], rest[a+b:]
	}
	parts[replayParts-1] = rest
	return true
}

// head returns the pipeline, batch id and event id of r.text (its first
// three parts) and whether the lengths of its parts fit the text, as
// split says; what the read keeps of a row until the sort.
func (r *replayRow) head() (pipeline, batchID, id string, ok bool) {
	var n uint64
	for _, l := range r.lens {
		n += l>>32 + l&0xffffffff // at most 8 x (2^32 - 1): no overflow
	}
	if n > uint64(len(r.text)) {
		return "", "", "", false
	}
	p, b, i := r.lens[0]>>32, r.lens[0]&0xffffffff, r.lens[1]>>32
	return r.text[:p], r.text[p : p+b], r.text[p+b : p+b+i], true
}

// event writes the event of row r (its text split before, of pipeline p,
// the one copy of its name, and business date d) into e: every field but
// Attrs, which the replay's read leaves as it is (nil). Field by field:
// a composite literal was built aside and copied in, a third of the cost.
func (r *replayRow) event(e *model.Event, parts *[replayParts]string, p string, d model.Date) {
	e.Spec, e.ID, e.Type, e.Time = model.SpecV1, parts[2], eventType(parts[3]), time.UnixMilli(r.ms).UTC()
	e.Pipeline, e.BusinessDate, e.BatchID, e.System = p, d, parts[1], system(parts[4])
	e.Component, e.Object, e.Checksum, e.Error = parts[5], parts[6], parts[7], parts[8]
	e.Rows, e.HasRows, e.Bytes, e.HasBytes = r.rows, r.hasRows != 0, r.bytes, r.hasBytes != 0
	e.Attempt, e.HasAttempt = r.attempt, r.hasAttempt != 0
}

// sameEvent says whether r is the row of the same event as l (pipeline,
// business date, batch id and event id). Consecutive rows are mostly
// events of one batch whose ids share all but their last bytes: the last
// byte and the lengths first, so that a comparison of the whole ids and
// batch ids (a sixth of the read's own time, 2026-12-02) is made only for
// the copies.
func (l *replayRow) sameEvent(r *replayRow) bool {
	a, b := l.id, r.id
	if len(a) != len(b) || l.rank != r.rank || l.days != r.days || len(l.batchID) != len(r.batchID) {
		return false
	}
	if n := len(a); n > 0 && a[n-1] != b[n-1] {
		return false
	}
	return a == b && l.batchID == r.batchID
}

// eventType returns t as the constant of a known type, so that the event
// holds no piece of the row's text for it; t itself when unknown.
func eventType(t string) model.EventType {
	if i := model.EventType(t).LookupIndex(); i >= 0 {
		return model.EventTypes[i]
	}
	return model.EventType(t)
}

// system returns s as the constant of a v1 system; s itself otherwise.
// The first byte picks the one candidate (the four differ in it).
func system(s string) model.System {
	if s == "" {
		return ""
	}
	var k model.System
	switch s[0] {
	case 'p':
		k = model.Producer
	case 'e':
		k = model.Exchange
	case 'c':
		k = model.Consumer
	case 'o':
		k = model.Operator
	}
	if string(k) == s {
		return k
	}
	return model.System(s)
}

// eachReplayRow is EachBatchEventPasses for a ReplayOnly store: it reads
// the rows w selects of the pipelines sorted (sorted, without duplicates)
// with the columns above, and hands each pass's rows to its Fn in the
// table's sort key order, each event_id once.
func (s *Store) eachReplayRow(ctx context.Context, sorted []string, w *where, passes []Pass) error {
	var rb *rowBlocks[replayRow]
	if s.replayPool != nil {
		rb, _ = s.replayPool.Get().(*rowBlocks[replayRow])
	}
	if rb == nil {
		rb = &rowBlocks[replayRow]{}
	}
	defer recycle(s.replayPool, rb)
	if err := s.readReplayRows(ctx, sorted, w, rb); err != nil {
		return err
	}
	order := rb.sort(func(r *replayRow) (string, string) { return r.batchID, r.id })
	for _, p := range passes {
		if p.To.Compare(p.From) < 0 {
			continue
		}
		// The dates from the sort keys, a small array, rather than from
		// the rows: a pass over a few dates of a unit touches no other.
		from, to := dateKey(p.From), dateKey(p.To)
		var (
			last  *replayRow
			parts [replayParts]string
			e     model.Event
			date  model.Date
		)
		for _, i := range order {
			if k := rb.keys[i] & 0xffffffff; k < from || k > to {
				continue
			}
			r := rb.at(i)
			if last != nil && last.sameEvent(r) {
				continue // a copy merges have not collapsed yet
			}
			if last == nil || r.days != last.days {
				date = dateOfDays(r.days)
			}
			last = r
			r.split(&parts) // checked as read
			r.event(&e, &parts, sorted[r.rank], date)
			if err := p.Fn(&e); err != nil {
				return err
			}
		}
	}
	return nil
}

// readReplayRows runs the replay's read of the rows w selects into rb.
func (s *Store) readReplayRows(ctx context.Context, sorted []string, w *where, rb *rowBlocks[replayRow]) error {
	rows, err := s.conn.Query(ctx, "SELECT "+replayColumns+" FROM "+s.events()+" WHERE "+w.String(), w.args...)
	if err != nil {
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	defer rows.Close()
	var (
		r        replayRow
		lastDays uint16
		lastDate model.Date
		lastName string // the pipeline of the row before: rows come in runs of one
		lastRank int
	)
	var dayFlags uint64
	dest := r.destinations(&dayFlags)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read events from %s: scan %s row: %w", s.events(), "events", err)
		}
		r.unpack(dayFlags)
		pipeline, batchID, id, ok := r.head()
		if !ok {
			return fmt.Errorf("read events from %s: a row of %d bytes of text, shorter than its parts' lengths %x say", s.events(), len(r.text), r.lens)
		}
		if pipeline != lastName || rb.n == 0 {
			i, ok := slices.BinarySearch(sorted, pipeline)
			if !ok {
				return fmt.Errorf("read events from %s: a row of pipeline %q, which the query did not ask for", s.events(), pipeline)
			}
			lastName, lastRank = sorted[i], i
		}
		r.rank, r.batchID, r.id = uint32(lastRank), batchID, id
		// Rows come in runs of one date: the conversion once a run.
		if r.days != lastDays || rb.n == 0 {
			lastDays, lastDate = r.days, dateOfDays(r.days)
		}
		rb.add(&r, uint64(lastRank), lastDate)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	return nil
}

// replayScan reads the rows of a query of replayColumns one at a time:
// the row, its text split into parts, and its business date.
type replayScan struct {
	r        replayRow
	parts    [replayParts]string
	date     model.Date
	dayFlags uint64
	dest     []any
}

// next scans the current row of rows (after rows.Next) from table.
func (sc *replayScan) next(rows driver.Rows, table string) error {
	if sc.dest == nil {
		sc.dest = sc.r.destinations(&sc.dayFlags)
	}
	days := sc.r.days
	if err := rows.Scan(sc.dest...); err != nil {
		return fmt.Errorf("read events from %s: scan row: %w", table, err)
	}
	sc.r.unpack(sc.dayFlags)
	if !sc.r.split(&sc.parts) {
		return fmt.Errorf("read events from %s: a row of %d bytes of text, shorter than its parts' lengths %x say", table, len(sc.r.text), sc.r.lens)
	}
	// Rows come in runs of one date: the conversion once a run.
	if sc.r.days != days {
		sc.date = dateOfDays(sc.r.days)
	}
	return nil
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

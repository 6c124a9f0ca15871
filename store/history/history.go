// Package history reads delivery events back from ClickHouse, with the
// context a batch's diagnosis needs (context.go: "The history a batch
// needs"): diagnose --clickhouse, backfill, serve, restore-signal and
// verify read through it, and the streaming detector restores from it.
//
// Reads do not use FINAL: its per-partition merge needs memory for every
// partition a read touches, and a few hundred valid events with business
// dates far apart made every read fail on ClickHouse's memory limit.
// Instead rows come in the table's sort key order (pipeline,
// business_date, batch_id, event_id), where the copies of an event that
// merges have not collapsed yet are adjacent and are skipped as they pass;
// and a large range is read in windows of dates (business dates; for
// heartbeats, days), each one query whose sort fits in bounded memory.
package history

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
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
	// Unordered lets the batch events of an all-pipelines read (no
	// Pipeline, no Batch) come in no particular order, and copies of an
	// event that merges have not collapsed yet come apart: for a caller
	// whose fold keys events by batch and event id itself (batches.Set).
	// ClickHouse then skips its sort, which on 18.16 cost three times the
	// read of one date across every pipeline (0.18-0.25 s against 0.06 s
	// for 10,000 rows). Reads of one pipeline or batch ignore it.
	Unordered bool
	// Small says a read of one pipeline's batch events (no Batch, no
	// Heartbeats) most likely holds at most a window of rows (a serve
	// page: a month of a pipeline, its baselines' four weeks): it is read
	// first as one query of at most WindowRows rows, and windows are
	// planned (a count per date, then a query per window) only for the
	// rows after them when it returned that many. The events and their
	// order are those of the windowed read; a read that fits is one round
	// trip instead of two.
	Small bool
	// AlsoFrom and AlsoTo, both set, add a second range of business dates
	// to a Small read, in the same query: the rows of either range come
	// in the sort key's order, each once (a caller routes them by date).
	// The batch page reads its batch's history and its baselines' window
	// so, one round trip for two ranges.
	AlsoFrom, AlsoTo model.Date
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
	// ReplayOnly leaves out of every read what the replay never reads:
	// spec (always handoff/v1 when stored) and attrs. The events read
	// then carry no attrs. Backfill sets it: the two attrs arrays were a
	// tenth of its decoding. EachBatchEvent then reads a row's text as
	// one String (replayread.go).
	ReplayOnly bool
	// ByDate reads the batch events of all-pipelines reads that may come
	// unordered (Filter.Unordered) from events_by_date, the copy sorted by
	// business date first (store/schema), when ReplayOnly: a date there is
	// one range of rows rather than a scan of its month. The caller sets
	// it once it knows the database has the copy (HasByDate).
	ByDate bool
	// local: read the tables' local replicated parts (NAME_local) on the
	// server conn is connected to, not the Distributed tables (Local).
	local bool
	// eventPool and replayPool keep the rowBlocks of finished
	// EachBatchEvent reads for the next (New makes them; nil: none kept).
	eventPool, replayPool *sync.Pool
}

// Local returns a Store that reads the local replicated part of each table
// (events_local, findings_v2_local) on the server conn is connected to:
// one replica's copy of one shard of a cluster. store/replicas uses it to
// read a shard through a replica it has just synchronised, which a read
// through the Distributed table (any replica, maybe behind) cannot
// promise.
func (s *Store) Local(conn driver.Conn) *Store {
	l := *s
	l.conn, l.local = conn, true
	return &l
}

// events is the table the reads select from.
func (s *Store) events() string {
	if s.local {
		return s.db + "." + schema.Events + schema.LocalSuffix
	}
	return s.db + "." + schema.Events
}

// batchTable is the table a read of batch events selects from:
// events_by_date for an unordered all-pipelines read (ByDate), events
// otherwise.
func (s *Store) batchTable(unordered bool) string {
	if !unordered || !s.ByDate || !s.ReplayOnly {
		return s.events()
	}
	if s.local {
		return s.db + "." + schema.EventsByDate + schema.LocalSuffix
	}
	return s.db + "." + schema.EventsByDate
}

// HasByDate reports whether the database has events_by_date, the view
// that keeps it and the mark that the history stored before the view was
// copied into it (schema.Ensure of this release or later): then ByDate
// may be set. Without the mark a copy is missing or was cut short, and
// events_by_date would lack batches.
func (s *Store) HasByDate(ctx context.Context) (bool, error) {
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name IN (?, ?, ?)", s.db,
		schema.EventsByDate, schema.EventsByDateView, schema.EventsByDateCopied).Scan(&n); err != nil {
		return false, fmt.Errorf("look for %s.%s: %w", s.db, schema.EventsByDate, err)
	}
	return n == 3, nil
}

// New returns a Store reading database db over conn. db is checked by
// schema.CheckDatabase, the one validator of names that reach SQL.
func New(conn driver.Conn, db string) (*Store, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return nil, err
	}
	return &Store{conn: conn, db: db, eventPool: &sync.Pool{}, replayPool: &sync.Pool{}}, nil
}

// columns returns the columns a read selects, in the order each scans.
func (s *Store) columns() string {
	if s.ReplayOnly {
		return schema.EventReplayColumns
	}
	return schema.EventReadColumns
}

// query is one SELECT with its arguments.
type query struct {
	sql  string
	args []any
	// day: the query is selectDay's (eachDay scans it).
	day bool
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

// in adds "col IN (?, ?, ...)": the driver binds a slice as an array
// literal, which 18.16's IN refuses ("Type mismatch in IN").
func (w *where) in(col string, vals []string) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	w.add(col+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", ")+")", args...)
}

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
	return query{sql: "SELECT " + s.columns() + " FROM " + s.events() + " WHERE " + w.String() +
		" ORDER BY " + dateCol + ", pipeline, batch_id, event_id", args: w.args}
}

// selectBatches reads the batch events w selects, ordered as selectWhere
// does unless unordered (Filter.Unordered).
func (s *Store) selectBatches(w *where, unordered bool) query {
	if unordered && s.ReplayOnly {
		return selectDay(s.batchTable(true), w)
	}
	if unordered {
		return query{sql: "SELECT " + s.columns() + " FROM " + s.batchTable(true) + " WHERE " + w.String(), args: w.args}
	}
	return s.selectWhere(w, "business_date")
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
	unordered := f.Unordered && f.Pipeline == ""
	if !f.From.IsZero() && f.From == f.To {
		// One business date is one window whatever it holds (windowed):
		// the count that plans the windows would only add a round trip.
		return append(out, s.selectBatches(batchWhere(f.Pipeline, f.From, f.To), unordered)), nil
	}
	qs, err := s.windowedAs(ctx, batchWhere(f.Pipeline, f.From, f.To), "business_date", unordered)
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
	return s.windowedAs(ctx, w, dateCol, false)
}

// windowedAs is windowed with each window's rows in no particular order
// when unordered (batch events only: Filter.Unordered).
func (s *Store) windowedAs(ctx context.Context, w *where, dateCol string, unordered bool) ([]query, error) {
	limit := uint64(s.WindowRows)
	if limit == 0 {
		limit = DefaultWindowRows
	}
	rows, err := s.conn.Query(ctx, "SELECT "+dateCol+", count() FROM "+s.batchTable(unordered)+" WHERE "+w.String()+
		" GROUP BY "+dateCol+" ORDER BY "+dateCol, w.args...)
	if err != nil {
		return nil, fmt.Errorf("plan the read of %s: %w", s.events(), err)
	}
	defer rows.Close()
	var (
		windows [][2]string
		n, c    uint64
		d       time.Time
	)
	for rows.Next() {
		if err := rows.Scan(&d, &c); err != nil {
			return nil, fmt.Errorf("plan the read of %s: scan: %w", s.events(), err)
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
		return nil, fmt.Errorf("plan the read of %s: %w", s.events(), err)
	}
	out := make([]query, 0, len(windows))
	for _, win := range windows {
		ww := &where{conds: slices.Clone(w.conds), args: slices.Clone(w.args)}
		ww.add(dateCol+" >= toDate(?)", win[0])
		ww.add(dateCol+" <= toDate(?)", win[1])
		if unordered {
			out = append(out, s.selectBatches(ww, true))
		} else {
			out = append(out, s.selectWhere(ww, dateCol))
		}
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
	return s.EachEventRef(ctx, f, func(e *model.Event) error { return fn(*e) })
}

// EachEventRef is EachEvent handing fn the event by reference: the event
// is overwritten by the next, so fn copies what it keeps. The serve pages
// fold every event into sets that copy it anyway, and a copy of each
// event on the heap (an escaping value) was a tenth of their read.
func (s *Store) EachEventRef(ctx context.Context, f Filter, each func(*model.Event) error) error {
	if f.Small && f.Batch == nil && !f.Heartbeats && f.Pipeline != "" {
		return s.eachSmall(ctx, f, each)
	}
	qs, err := s.plan(ctx, f)
	if err != nil {
		return err
	}
	var prev rowKey
	for _, q := range qs {
		run := s.each
		if q.day {
			run = s.eachDay
		}
		if err := run(ctx, q, &prev, each); err != nil {
			return err
		}
	}
	return nil
}

// eachSmall is EachEvent of a Small read: one query of at most
// WindowRows rows in the sort key's order (ClickHouse keeps no more than
// that in its sort, as with a window), then, only when it returned that
// many, the rows after the last one read, in windows planned as plan
// does.
func (s *Store) eachSmall(ctx context.Context, f Filter, each func(*model.Event) error) error {
	// body is what selects the rows but the pipeline.
	body := batchWhere("", f.From, f.To)
	if !f.AlsoFrom.IsZero() && !f.AlsoTo.IsZero() && (!f.From.IsZero() || !f.To.IsZero()) {
		main := &where{}
		if !f.From.IsZero() {
			main.add("business_date >= toDate(?)", f.From.String())
		}
		if !f.To.IsZero() {
			main.add("business_date <= toDate(?)", f.To.String())
		}
		body = &where{}
		body.add("batch_id != ''")
		body.add("(("+main.String()+") OR (business_date >= toDate(?) AND business_date <= toDate(?)))",
			append(main.args, f.AlsoFrom.String(), f.AlsoTo.String())...)
	}
	w := &where{}
	w.add("pipeline = ?", f.Pipeline)
	w.conds, w.args = append(w.conds, body.conds...), append(w.args, body.args...)
	limit := s.WindowRows
	if limit <= 0 {
		limit = DefaultWindowRows
	}
	var prev rowKey
	// The pipeline in PREWHERE: the key finds the granules of the
	// pipeline's range, a few thousand rows of which are its own, and
	// ClickHouse reads the other columns of those rows only, where as a
	// key column it would not move the condition there itself. A
	// pipeline-month at 10,000 pipelines read a seventh of the bytes,
	// for three quarters of the CPU (2026-12-02); the same rows either
	// way. Distributed tables pass it on to the shards.
	q := query{sql: "SELECT " + s.columns() + " FROM " + s.events() + " PREWHERE pipeline = ? WHERE " + body.String() +
		" ORDER BY business_date, pipeline, batch_id, event_id LIMIT " + strconv.Itoa(limit), args: append([]any{f.Pipeline}, body.args...)}
	n, err := s.eachRows(ctx, q, &prev, each)
	if err != nil || n < limit {
		return err
	}
	// The rest: rows after the last one read, in the sort key's order
	// (one pipeline: business date, batch id, event id). The copies of
	// that last event, if any were cut off, are after none of it.
	d := prev.businessDate.String()
	rest := &where{conds: slices.Clone(w.conds), args: slices.Clone(w.args)}
	rest.add("business_date >= toDate(?)", d)
	rest.add("(business_date > toDate(?) OR (business_date = toDate(?) AND (batch_id > ? OR (batch_id = ? AND event_id > ?))))",
		d, d, prev.batchID, prev.batchID, prev.eventID)
	qs, err := s.windowed(ctx, rest, "business_date")
	if err != nil {
		return err
	}
	for _, q := range qs {
		if err := s.each(ctx, q, &prev, each); err != nil {
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

// each runs q and hands its rows to fn, the copies of an event skipped.
// The event fn is given is overwritten by the next row.
func (s *Store) each(ctx context.Context, q query, prev *rowKey, fn func(*model.Event) error) error {
	_, err := s.eachRows(ctx, q, prev, fn)
	return err
}

// eachRows is each, saying how many rows q returned (copies included).
func (s *Store) eachRows(ctx context.Context, q query, prev *rowKey, fn func(*model.Event) error) (int, error) {
	rows, err := s.conn.Query(ctx, q.sql, q.args...)
	if err != nil {
		return 0, fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	defer rows.Close()
	sc := schema.EventScanner{ReplayOnly: s.ReplayOnly}
	var e model.Event
	n := 0
	for rows.Next() {
		if err := sc.Scan(rows, &e); err != nil {
			return n, fmt.Errorf("read events from %s: %w", s.events(), err)
		}
		n++
		k := rowKey{pipeline: e.Pipeline, batchID: e.BatchID, eventID: e.ID, businessDate: e.BusinessDate}
		if k == *prev {
			continue // a copy merges have not collapsed yet
		}
		*prev = k
		if err := fn(&e); err != nil {
			return n, err
		}
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("read events from %s: %w", s.events(), err)
	}
	return n, nil
}

// CensusFilter selects the pipelines Census counts: Pipelines (nil: every
// pipeline with a batch event in [From, To]), their stored rows in
// [ReadFrom, To] (ReadFrom <= From: the dates read for context only).
// Scheduled pipelines are counted even with no batch event in [From, To],
// when their history starts by To: their calendar may expect batches of
// the range that never came.
type CensusFilter struct {
	Pipelines      []string
	Scheduled      []string
	ReadFrom, From model.Date
	To             model.Date
}

// PipelineRows is what Census knows of one pipeline.
type PipelineRows struct {
	Pipeline string
	// First is the pipeline's earliest business date with a batch event
	// (up to To), before ReadFrom too: where its history starts.
	First model.Date
	// Rows counts the stored rows of batch events in [ReadFrom, To], and
	// InRange those in [From, To]. Stored rows include the copies of an
	// event that merges have not collapsed yet, so they are an upper
	// bound of the events read.
	Rows, InRange uint64
}

// Census returns, in pipeline order, the pipelines with batch events in
// [From, To] (and the scheduled ones whose history starts by To) and
// their row counts. One GROUP BY over the primary key
// columns (pipeline, business_date) and batch_id.
func (s *Store) Census(ctx context.Context, f CensusFilter) ([]PipelineRows, error) {
	if f.From.IsZero() || f.To.IsZero() || f.ReadFrom.IsZero() {
		return nil, fmt.Errorf("store census: from, to and read-from dates are required")
	}
	w := &where{}
	w.add("batch_id != ''")
	w.add("business_date <= toDate(?)", f.To.String())
	if len(f.Pipelines) > 0 {
		w.in("pipeline", f.Pipelines)
	}
	args := append([]any{f.ReadFrom.String(), f.From.String()}, w.args...)
	return s.census(ctx, "SELECT pipeline, min(business_date), countIf(business_date >= toDate(?)), countIf(business_date >= toDate(?)) FROM "+
		s.events()+" WHERE "+w.String()+" GROUP BY pipeline ORDER BY pipeline", args, func(p PipelineRows) bool {
		return p.InRange > 0 || slices.Contains(f.Scheduled, p.Pipeline)
	})
}

// census runs a count by pipeline whose columns are the pipeline, its
// earliest date, and its Rows and InRange counts, keeping the rows keep
// accepts (nil: all).
func (s *Store) census(ctx context.Context, query string, args []any, keep func(PipelineRows) bool) ([]PipelineRows, error) {
	rows, err := s.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("count the events of %s by pipeline: %w", s.events(), err)
	}
	defer rows.Close()
	var out []PipelineRows
	for rows.Next() {
		var (
			p     PipelineRows
			first time.Time
		)
		if err := rows.Scan(&p.Pipeline, &first, &p.Rows, &p.InRange); err != nil {
			return nil, fmt.Errorf("count the events of %s by pipeline: scan: %w", s.events(), err)
		}
		if keep != nil && !keep(p) {
			continue
		}
		p.First = model.Date{Year: first.Year(), Month: first.Month(), Day: first.Day()}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count the events of %s by pipeline: %w", s.events(), err)
	}
	return out, nil
}

// EachBatchEvent streams the batch events of pipelines with business dates
// in [from, to] to fn in the table's sort key order (pipeline, business
// date, batch id, event id), each event_id once. It reads them in one
// query and holds them all: the caller sizes the read (Census counts it;
// EachEvent windows one pipeline).
//
// The rows are sorted here, not by the server: on 18.16 an ORDER BY of
// these columns took three times as long as the read itself (0.68 s
// against 0.21 s for 49,000 rows of twelve pipelines), and the server's
// cores are the ones the fold needs; sorting the row indices in Go costs
// a few milliseconds.
func (s *Store) EachBatchEvent(ctx context.Context, pipelines []string, from, to model.Date, fn func(model.Event) error) error {
	return s.EachBatchEventPasses(ctx, pipelines, Pass{From: from, To: to, Fn: func(e *model.Event) error { return fn(*e) }})
}

// Pass is one walk of EachBatchEventPasses: the events of business dates
// From to To, inclusive, handed to Fn. The event is Fn's only until it
// returns (the next one is written over it): a pointer, so that an
// event of 264 bytes is not copied at every call on its way to the fold.
type Pass struct {
	From, To model.Date
	Fn       func(*model.Event) error
}

// EachBatchEventPasses is EachBatchEvent for several ranges of dates of
// the same pipelines, walked one after the other: each pass's events go
// to its Fn, in the table's sort key order, once every earlier pass has
// ended. When the ranges join up (overlap or touch), the rows of all of
// them come in one query, read and sorted once: a backfill's read of a
// unit and of its baselines' window (which the range mostly holds) were
// two queries, each reading a granule of every part its pipelines have
// rows in, and each decoded and sorted. Ranges with a gap between them
// are read one query each, so that no date outside them is read.
func (s *Store) EachBatchEventPasses(ctx context.Context, pipelines []string, passes ...Pass) error {
	if len(pipelines) == 0 {
		return nil
	}
	from, to, joined := span(passes)
	if !joined {
		for _, p := range passes {
			if err := s.EachBatchEventPasses(ctx, pipelines, p); err != nil {
				return err
			}
		}
		return nil
	}
	if from.IsZero() {
		return nil // every range is empty
	}
	w := &where{}
	w.in("pipeline", pipelines)
	w.add("batch_id != ''")
	w.add("business_date >= toDate(?)", from.String())
	w.add("business_date <= toDate(?)", to.String())
	sorted := slices.Clone(pipelines)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	if s.ReplayOnly {
		return s.eachReplayRow(ctx, sorted, w, passes)
	}
	q := query{sql: "SELECT " + s.columns() + " FROM " + s.events() + " WHERE " + w.String(), args: w.args}
	// The row's pipeline becomes the name's one copy: the driver's
	// per-row strings go.
	rank := make(map[string]uint64, len(sorted))
	for i, p := range sorted {
		rank[p] = uint64(i)
	}
	var (
		rb       = s.eventBlocks()
		prev     rowKey
		lastName string // the pipeline of the row before: rows come in runs of one
		lastRank uint64
	)
	if err := s.each(ctx, q, &prev, func(e *model.Event) error {
		r := lastRank
		if e.Pipeline != lastName || rb.n == 0 {
			var ok bool
			if r, ok = rank[e.Pipeline]; !ok {
				return fmt.Errorf("read events from %s: a row of pipeline %q, which the query did not ask for", s.events(), e.Pipeline)
			}
			lastName, lastRank = e.Pipeline, r
		}
		e.Pipeline = sorted[r]
		rb.add(e, r, e.BusinessDate)
		return nil
	}); err != nil {
		return err
	}
	defer recycle(s.eventPool, rb)
	return emitEvents(rb, passes)
}

// span returns the dates the non-empty ranges of passes cover together
// (zero dates when every one is empty) and whether they join up into
// one range, with no date between them that none covers.
func span(passes []Pass) (from, to model.Date, joined bool) {
	var ranges []Pass
	for _, p := range passes {
		if p.To.Compare(p.From) >= 0 {
			ranges = append(ranges, p)
		}
	}
	slices.SortFunc(ranges, func(a, b Pass) int { return a.From.Compare(b.From) })
	for i, p := range ranges {
		if i == 0 {
			from, to = p.From, p.To
			continue
		}
		if p.From.Compare(to.AddDays(1)) > 0 {
			return model.Date{}, model.Date{}, false
		}
		if p.To.Compare(to) > 0 {
			to = p.To
		}
	}
	return from, to, true
}

// eventBlocks returns an empty rowBlocks of events, a recycled one when
// there is one.
func (s *Store) eventBlocks() *rowBlocks[model.Event] {
	if s.eventPool != nil {
		if rb, ok := s.eventPool.Get().(*rowBlocks[model.Event]); ok {
			return rb
		}
	}
	return &rowBlocks[model.Event]{}
}

// recycle empties rb and keeps it in pool for the next read (nothing
// when pool is nil): a unit's blocks made and zeroed afresh for every
// read were 5% of a backfill's allocations. The rows are zeroed, so that
// a kept rowBlocks holds no string of the read before.
func recycle[T any](pool *sync.Pool, rb *rowBlocks[T]) {
	if pool == nil {
		return
	}
	for i := range rb.blocks[:rb.filled] {
		clear(rb.blocks[i])
		rb.blocks[i] = rb.blocks[i][:0]
	}
	rb.keys, rb.order, rb.n, rb.filled = rb.keys[:0], rb.order[:0], 0, 0
	pool.Put(rb)
}

// rowBlocks holds the rows of one EachBatchEvent read until they are
// sorted. The rows are kept in blocks: one growing slice of events copied
// itself over and over (a fifth of the CPU of a backfill).
type rowBlocks[T any] struct {
	blocks [][]T
	// keys holds each row's pipeline and business date, the leading
	// columns of the sort key, as one integer (the pipeline's rank among
	// the names read, then the date), so that the sort compares strings
	// only within a date: most comparisons of a sort are between rows far
	// apart, and pipeline names of a unit share long prefixes.
	keys  []uint64
	order []int32
	// counts is bucketSort's, kept for the next read.
	counts []int32
	n      int
	// filled is how many of blocks hold rows (the others are kept for
	// reuse).
	filled int
}

const rowBlock = 4096

// add keeps a copy of row, whose pipeline has rank r among the names
// read and whose business date is d.
func (rb *rowBlocks[T]) add(row *T, r uint64, d model.Date) {
	if rb.n%rowBlock == 0 {
		if rb.filled == len(rb.blocks) {
			rb.blocks = append(rb.blocks, make([]T, 0, rowBlock))
		}
		rb.filled++
	}
	b := &rb.blocks[rb.filled-1]
	*b = append(*b, *row)
	rb.keys = append(rb.keys, r<<32|dateKey(d))
	rb.n++
}

// at returns row i.
func (rb *rowBlocks[T]) at(i int32) *T { return &rb.blocks[i/rowBlock][i%rowBlock] }

// sort returns the rows' indices in the table's sort key order, ids
// giving a row's batch id and event id; copies of an event come
// together, in the order read.
func (rb *rowBlocks[T]) sort(ids func(*T) (batch, event string)) []int32 {
	keys := rb.keys
	order := slices.Grow(rb.order[:0], rb.n)[:rb.n]
	rb.order = order
	if rb.bucketSort(order, ids) {
		return order
	}
	for i := range order {
		order[i] = int32(i)
	}
	sortRuns(order, func(a, b int32) int {
		if ka, kb := keys[a], keys[b]; ka != kb {
			return cmp.Compare(ka, kb)
		}
		ba, ia := ids(rb.at(a))
		bb, ib := ids(rb.at(b))
		if c := strings.Compare(ba, bb); c != 0 {
			return c
		}
		return strings.Compare(ia, ib)
	})
	return order
}

// bucketSort sets order to the rows' indices in the table's sort key
// order, as sort does, by a counting sort of the keys (a bucket for each
// pipeline and date of the span the rows cover, in the order read) and a
// sort of each bucket's few rows by batch id and event id: the merges of
// sortRuns compared every row some seven times, through a function
// value. It returns false, order untouched, when the keys span too many
// buckets for the rows (dates over many years).
func (rb *rowBlocks[T]) bucketSort(order []int32, ids func(*T) (batch, event string)) bool {
	keys := rb.keys[:rb.n]
	if len(keys) == 0 {
		return true
	}
	minR, maxR := keys[0]>>32, keys[0]>>32
	minD, maxD := keys[0]&0xffffffff, keys[0]&0xffffffff
	for _, k := range keys[1:] {
		r, d := k>>32, k&0xffffffff
		minR, maxR, minD, maxD = min(minR, r), max(maxR, r), min(minD, d), max(maxD, d)
	}
	days := maxD - minD + 1
	buckets := (maxR - minR + 1) * days
	if buckets > 4*uint64(len(keys))+4096 {
		return false
	}
	bucket := func(k uint64) uint64 { return (k>>32-minR)*days + (k&0xffffffff - minD) }
	counts := slices.Grow(rb.counts[:0], int(buckets)+1)[:buckets+1]
	clear(counts)
	rb.counts = counts
	for _, k := range keys {
		counts[bucket(k)+1]++
	}
	for b := 1; b < len(counts); b++ {
		counts[b] += counts[b-1]
	}
	for i, k := range keys {
		b := bucket(k)
		order[counts[b]] = int32(i)
		counts[b]++
	}
	// counts[b] is now the end of bucket b.
	less := func(a, b int32) int {
		ba, ia := ids(rb.at(a))
		bb, ib := ids(rb.at(b))
		if c := strings.Compare(ba, bb); c != 0 {
			return c
		}
		return strings.Compare(ia, ib)
	}
	start := int32(0)
	for _, end := range counts[:buckets] {
		seg := order[start:end]
		start = end
		if len(seg) > 24 {
			// The server's runs of a part come in order: sortRuns finds
			// them (a bucket of one run, the usual, costs a comparison a
			// row), where slices.SortStableFunc compared each row of a
			// sorted bucket some five times.
			sortRuns(seg, less)
			continue
		}
		// Insertion: stable, a comparison a row when the bucket came in
		// order, and a bucket is a batch or a few of one date.
		for i := 1; i < len(seg); i++ {
			for j := i; j > 0 && less(seg[j-1], seg[j]) > 0; j-- {
				seg[j-1], seg[j] = seg[j], seg[j-1]
			}
		}
	}
	return true
}

// emitEvents hands the events of rb to each pass's Fn, those of its
// dates, in the table's sort key order, each event_id once.
func emitEvents(rb *rowBlocks[model.Event], passes []Pass) error {
	order := rb.sort(func(e *model.Event) (string, string) { return e.BatchID, e.ID })
	for _, p := range passes {
		var last *model.Event
		from, to := dateKey(p.From), dateKey(p.To)
		for _, i := range order {
			if k := rb.keys[i] & 0xffffffff; k < from || k > to {
				continue
			}
			e := rb.at(i)
			if last != nil && compareRows(last, e) == 0 {
				continue // a copy merges have not collapsed yet
			}
			last = e
			if err := p.Fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// dateKey orders dates as Date.Compare does, in 32 bits.
func dateKey(d model.Date) uint64 {
	return uint64(uint32(d.Year)<<9 | uint32(d.Month)<<5 | uint32(d.Day))
}

// compareRows orders events as the table's sort key does.
func compareRows(a, b *model.Event) int {
	if c := strings.Compare(a.Pipeline, b.Pipeline); c != 0 {
		return c
	}
	if c := a.BusinessDate.Compare(b.BusinessDate); c != 0 {
		return c
	}
	if c := strings.Compare(a.BatchID, b.BatchID); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// LatestHeartbeats returns the latest heartbeat of each process (pipeline,
// system, component) up to asOf, of pipelines (nil: all): every stored row
// at that process's latest time, so that the caller breaks ties by event id
// as batches.Processes does. A diagnosis names only the latest heartbeat
// of each process, so this is all of them it needs, however long the
// history.
func (s *Store) LatestHeartbeats(ctx context.Context, pipelines []string, asOf time.Time) ([]model.Event, error) {
	return s.latestHeartbeats(ctx, heartbeatsUpTo(pipelines, asOf))
}

// heartbeatsUpTo selects the heartbeats of pipelines (nil: all) up to asOf.
func heartbeatsUpTo(pipelines []string, asOf time.Time) *where {
	w := &where{}
	w.add("business_date = toDate('1970-01-01')")
	w.add("batch_id = ''")
	w.add("type = 'process.heartbeat'")
	w.add("time_ms <= ?", asOf.UnixMilli())
	if len(pipelines) > 0 {
		w.in("pipeline", pipelines)
	}
	return w
}

// LatestHeartbeatPerProcess returns, of each process (pipeline, system,
// component) of pipelines (nil: all), the one heartbeat up to asOf that a
// batches.Processes keeps of LatestHeartbeats's answer: the latest, ties
// broken by the greatest event id (bytewise, as Go and ClickHouse compare
// strings), ordered by process. It is one GROUP BY, where LatestHeartbeats
// reads the rows at each latest time through a GLOBAL IN subquery that
// doubled the statement's server CPU on 18.16 (5.6 ms against 2.7 ms with
// no row to read): for callers that only fold the heartbeats into a Set
// (the serve pages). A caller that shows or counts the rows themselves
// (diagnose) reads LatestHeartbeats.
func (s *Store) LatestHeartbeatPerProcess(ctx context.Context, pipelines []string, asOf time.Time) ([]model.Event, error) {
	w := heartbeatsUpTo(pipelines, asOf)
	rows, err := s.conn.Query(ctx, "SELECT pipeline, system, component, max(time_ms), argMax(event_id, (time_ms, event_id)) FROM "+s.events()+
		" WHERE "+w.String()+" GROUP BY pipeline, system, component ORDER BY pipeline, system, component", w.args...)
	if err != nil {
		return nil, fmt.Errorf("read the latest heartbeats from %s: %w", s.events(), err)
	}
	return s.scanHeartbeats(rows)
}

// latestHeartbeats returns, for the heartbeats w selects, every stored row
// at each process's latest time, copies skipped, ordered by process and
// event id.
func (s *Store) latestHeartbeats(ctx context.Context, w *where) ([]model.Event, error) {
	args := append(slices.Clone(w.args), w.args...)
	// GLOBAL IN: on a cluster both reads are of the Distributed table, and
	// a plain IN would run the subquery on every shard against every shard
	// (ClickHouse refuses it: distributed_product_mode = 'deny'); GLOBAL
	// runs it once and ships the result. On one server it is a plain IN.
	rows, err := s.conn.Query(ctx, "SELECT pipeline, system, component, time_ms, event_id FROM "+s.events()+" WHERE "+w.String()+
		" AND (pipeline, system, component, time_ms) GLOBAL IN (SELECT pipeline, system, component, max(time_ms) FROM "+s.events()+" WHERE "+w.String()+
		" GROUP BY pipeline, system, component) ORDER BY pipeline, system, component, event_id", args...)
	if err != nil {
		return nil, fmt.Errorf("read the latest heartbeats from %s: %w", s.events(), err)
	}
	return s.scanHeartbeats(rows)
}

// scanHeartbeats reads rows of (pipeline, system, component, time_ms,
// event_id) ordered by process and event id as heartbeat events, and
// closes them. A row equal to the one before is a copy merges have not
// collapsed yet (adjacent: sorted by event_id) and is skipped.
func (s *Store) scanHeartbeats(rows driver.Rows) ([]model.Event, error) {
	defer rows.Close()
	var out []model.Event
	for rows.Next() {
		var (
			e      model.Event
			system string
			ms     int64
		)
		if err := rows.Scan(&e.Pipeline, &system, &e.Component, &ms, &e.ID); err != nil {
			return nil, fmt.Errorf("read the latest heartbeats from %s: scan: %w", s.events(), err)
		}
		e.Spec, e.Type, e.System, e.Time = model.SpecV1, model.ProcessHeartbeat, model.System(system), time.UnixMilli(ms).UTC()
		if n := len(out); n > 0 && out[n-1].ID == e.ID && out[n-1].Pipeline == e.Pipeline &&
			out[n-1].System == e.System && out[n-1].Component == e.Component {
			continue
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the latest heartbeats from %s: %w", s.events(), err)
	}
	return out, nil
}

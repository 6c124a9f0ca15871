// Package judgements reads back what the judges published and handoff
// ingest stored: the streaming detector's findings (findings_v2) and
// backfill's diagnoses (diagnoses_v2). It is the one home of that SQL: the
// detector's restore (through store/history), `handoff findings` and
// `handoff serve` all read through it.
//
// A finding's records are numbered by seq (open, each status change,
// resolved, reopened...). The latest record is the one with the highest
// seq, read with argMax, never FINAL: a record delivered twice is two rows
// with the same (fingerprint, seq) and the same content until merges
// collapse them, so argMax reads the same state either way, and a
// finding counts once however many copies are stored. A diagnosis' latest
// row is the one with the latest as_of_ms, read the same way.
package judgements

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
)

// Finding states, as stored (untyped: they compare with a filter's
// string and with a detect.State alike).
const (
	StateOpen     = "open"
	StateResolved = "resolved"
)

// Kinds returns every kind a finding may have: the detector's own
// (overdue, missing, failed) and the replay's anomaly kinds that break a
// batch (late is overdue's, and a continuity gap is the previous batch's
// own finding).
func Kinds() []string {
	out := []string{string(detect.Overdue), string(detect.Missing), string(detect.Failed), string(detect.Unusual)}
	for _, k := range replay.AnomalyKinds {
		if k.Breaks() {
			out = append(out, string(k))
		}
	}
	return out
}

// Filter selects findings. Zero fields select all.
type Filter struct {
	// Pipelines are exact pipeline names and Prefixes pipeline name
	// prefixes; a finding matches when its pipeline is one of Pipelines or
	// starts with one of Prefixes. Both empty: every pipeline.
	Pipelines []string
	Prefixes  []string
	// From and To bound the business date inclusively; a zero Date leaves
	// that side open.
	From, To model.Date
	// State is StateOpen, StateResolved, or "" for both: the state of the
	// latest record.
	State string
	// Kinds are finding kinds (Kinds()); empty: every kind.
	Kinds []string
	// Local reads the table's local replicated part (findings_v2_local) on
	// the server the connection is on, instead of the Distributed table:
	// one replica's copy of one shard, for reads that must see every
	// acknowledged record (the detector's restore on a cluster, through
	// store/replicas). Not user input.
	Local bool
}

// table is the table f reads in database db.
func (f *Filter) table(db string) string {
	if f.Local {
		return db + "." + schema.Findings + schema.LocalSuffix
	}
	return db + "." + schema.Findings
}

// FieldError is a Filter field with a value Check refuses.
type FieldError struct {
	// Field is the filter's name for it: pipeline, from, to, state, kind.
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Check validates f as user input: names as events carry them, a known
// state and kinds, From not after To. Errors are *FieldError.
func (f *Filter) Check() error {
	for _, p := range f.Pipelines {
		if err := model.CheckName("pipeline", p); err != nil {
			return bad("pipeline", "%v", err)
		}
	}
	for _, p := range f.Prefixes {
		if err := model.CheckName("pipeline", p); err != nil {
			return bad("pipeline", "prefix: %v", err)
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.From.Compare(f.To) > 0 {
		return bad("from", "%s is after to %s", f.From, f.To)
	}
	switch f.State {
	case "", StateOpen, StateResolved:
	default:
		return bad("state", "%q: want %s or %s", clip(f.State), StateOpen, StateResolved)
	}
	known := Kinds()
	for _, k := range f.Kinds {
		if !slices.Contains(known, k) {
			return bad("kind", "%q is not a finding kind: want one of %s", clip(k), strings.Join(known, ", "))
		}
	}
	return nil
}

// clip shortens a hostile value for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Order is the order findings are read in, which also decides which ones a
// limit keeps.
type Order int

const (
	// Unordered: as the server returns them (the detector's restore,
	// which reads every finding and sorts nothing).
	Unordered Order = iota
	// ByRaised: open first, then oldest raised first (the serve pages:
	// what has waited longest on top).
	ByRaised
	// ByBatch: by business date, pipeline, batch id, kind, name (the
	// command's listing).
	ByBatch
)

// orderBy is the ORDER BY of each Order; fingerprint last makes it total.
var orderBy = map[Order]string{
	Unordered: "",
	ByRaised:  "st = 'open' DESC, raised, fingerprint",
	ByBatch:   "business_date, pipeline, batch_id, k, nm, fingerprint",
}

// Query is one SELECT with its arguments, for the driver to bind.
type Query struct {
	SQL  string
	Args []any
}

// Select returns the query reading at most limit findings (0: every one)
// that f selects from database db, in order o. Every value is a bound
// argument; db is checked by schema.CheckDatabase. Scan reads its rows.
func Select(db string, f Filter, o Order, limit int) (Query, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return Query{}, err
	}
	order, ok := orderBy[o]
	if !ok {
		return Query{}, fmt.Errorf("findings: unknown order %d", o)
	}
	if limit < 0 {
		return Query{}, fmt.Errorf("findings: limit %d: want 0 (no limit) or more", limit)
	}
	where, having, args := f.clauses()
	tail := ""
	if order != "" {
		tail = " ORDER BY " + order
	}
	if limit > 0 {
		tail += " LIMIT ?"
		args = append(args, limit)
	}
	return Query{
		SQL: "SELECT fingerprint, argMax(batch, seq), pipeline, business_date, batch_id, toString(argMax(state, seq)) AS st, " +
			"argMax(kind, seq) AS k, argMax(name, seq) AS nm, max(seq), argMax(raised_ms, seq) AS raised, argMax(resolved_ms, seq), " +
			"argMax(deadline_ms, seq), argMax(lateness_ms, seq), argMax(evidence_as_of_ms, seq), argMax(severity, seq), argMax(owner, seq), " +
			"argMax(status, seq), argMax(verdict, seq), argMax(first_missing, seq), " +
			"argMax(reporting_delay_ms, seq), argMax(resolution, seq), argMax(superseded_by, seq), argMax(root, seq) FROM " + f.table(db) + where +
			" GROUP BY pipeline, business_date, batch_id, fingerprint" + having + tail,
		Args: args,
	}, nil
}

// SelectNames is Select of the batch and the name of each finding f
// selects, in order ByRaised, and nothing else; ScanName reads its rows.
// A serve grid marks the cells of the open early warnings with them, and
// Select's twenty-three columns cost twice this statement's server CPU on
// 18.16 (5.7 ms against 2.9 ms, with no row to read).
func SelectNames(db string, f Filter) (Query, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return Query{}, err
	}
	where, having, args := f.clauses()
	return Query{
		SQL: "SELECT fingerprint, pipeline, business_date, batch_id, toString(argMax(state, seq)) AS st, argMax(name, seq) AS nm, " +
			"argMax(raised_ms, seq) AS raised FROM " + f.table(db) + where +
			" GROUP BY pipeline, business_date, batch_id, fingerprint" + having + " ORDER BY " + orderBy[ByRaised],
		Args: args,
	}, nil
}

// ScanName reads the current row of a SelectNames query: the finding's
// batch and its latest record's name.
func ScanName(row Row) (model.BatchKey, string, error) {
	var (
		fingerprint, pipeline, batchID, state, name string
		bd                                          time.Time
		raised                                      int64
	)
	if err := row.Scan(&fingerprint, &pipeline, &bd, &batchID, &state, &name, &raised); err != nil {
		return model.BatchKey{}, "", fmt.Errorf("scan a finding's name: %w", err)
	}
	return model.BatchKey{Pipeline: pipeline, BusinessDate: schema.DateFromColumn(bd), BatchID: batchID}, name, nil
}

// clauses are the WHERE and HAVING of a read of the findings f selects,
// with their arguments in order.
func (f *Filter) clauses() (where, having string, args []any) {
	var conds []string
	// pipeline IN (?, ?): the driver binds a slice as an array literal,
	// which 18.16's IN refuses.
	var alts []string
	if len(f.Pipelines) > 0 {
		alts = append(alts, "pipeline IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(f.Pipelines)), ", ")+")")
		for _, p := range f.Pipelines {
			args = append(args, p)
		}
	}
	for _, p := range f.Prefixes {
		alts = append(alts, "startsWith(pipeline, ?)")
		args = append(args, p)
	}
	if len(alts) > 0 {
		conds = append(conds, "("+strings.Join(alts, " OR ")+")")
	}
	if !f.From.IsZero() {
		conds = append(conds, "business_date >= toDate(?)")
		args = append(args, f.From.String())
	}
	if !f.To.IsZero() {
		conds = append(conds, "business_date <= toDate(?)")
		args = append(args, f.To.String())
	}
	// The kind is part of the fingerprint, the same in every record of a
	// finding: it filters rows. The state is the latest record's: it
	// filters groups.
	if len(f.Kinds) > 0 {
		conds = append(conds, "kind IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(f.Kinds)), ", ")+")")
		for _, k := range f.Kinds {
			args = append(args, k)
		}
	}
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	if f.State != "" {
		having = " HAVING st = ?"
		args = append(args, f.State)
	}
	return where, having, args
}

// Row is one result row: chconn.Rows is one.
type Row interface {
	Scan(dest ...any) error
}

// Scan reads the current row of a Select query: the latest record of one
// finding, decoded by schema.FindingRow.Finding (the one decoder of a
// stored finding), without its diagnosis (see FindingRow.Finding).
func Scan(row Row) (detect.Finding, error) {
	var (
		r        schema.FindingRow
		batch    string
		bd       time.Time
		pipeline string
		batchID  string
	)
	if err := row.Scan(&r.Fingerprint, &batch, &pipeline, &bd, &batchID, &r.State, &r.Kind, &r.Name, &r.Seq,
		&r.RaisedMS, &r.ResolvedMS, &r.DeadlineMS, &r.LatenessMS, &r.EvidenceAsOfMS, &r.Severity, &r.Owner, &r.Status, &r.Verdict,
		&r.FirstMissing, &r.ReportingDelayMS, &r.Resolution, &r.SupersededBy, &r.Root); err != nil {
		return detect.Finding{}, fmt.Errorf("scan a finding: %w", err)
	}
	r.Key = model.BatchKey{Pipeline: pipeline, BusinessDate: schema.DateFromColumn(bd), BatchID: batchID}
	return r.Finding()
}

// Querier runs a read: chconn.Conn is one.
type Querier interface {
	Query(ctx context.Context, query string, args ...any) (chconn.Rows, error)
}

// Result is what Read found.
type Result struct {
	Findings []detect.Finding
	// Truncated is set when more findings matched than the limit: the
	// first limit of them, in the order asked for, are in Findings.
	Truncated bool
}

// Read reads at most limit findings (0: every one) that f selects from
// database db over conn, in order o, and says whether more matched.
func Read(ctx context.Context, conn Querier, db string, f Filter, o Order, limit int) (Result, error) {
	ask := limit
	if limit > 0 {
		ask = limit + 1 // one more tells whether there are more
	}
	q, err := Select(db, f, o, ask)
	if err != nil {
		return Result{}, err
	}
	rows, err := conn.Query(ctx, q.SQL, q.Args...)
	if err != nil {
		return Result{}, fmt.Errorf("read findings from %s: %w", f.table(db), err)
	}
	defer rows.Close()
	var res Result
	for rows.Next() {
		if limit > 0 && len(res.Findings) == limit {
			res.Truncated = true
			break
		}
		fd, err := Scan(rows)
		if err != nil {
			return Result{}, fmt.Errorf("read findings from %s: %w", f.table(db), err)
		}
		res.Findings = append(res.Findings, fd)
	}
	if err := rows.Err(); err != nil {
		return Result{}, fmt.Errorf("read findings from %s: %w", f.table(db), err)
	}
	return res, nil
}

package serve

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/findings"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/judgements"
	"github.com/handoff-dev/handoff/store/schema"
)

// Conn is what the server needs of a ClickHouse connection: reads only.
// chconn.Conn implements it; tests wrap it to see every statement sent.
type Conn = judgements.Querier

// reader runs the server's own reads: every statement is a constant with
// ? placeholders bound by the driver, the database name the one identifier
// spliced in, checked by schema.CheckDatabase.
type reader struct {
	conn    Conn
	db      string
	timeout time.Duration
	// readonly is set when the connection's user runs with readonly=1:
	// such a user may not change any setting, max_execution_time included,
	// so queries then carry no settings and no deadline (the driver turns a
	// deadline into max_execution_time) and are cancelled by a timer.
	readonly bool
}

// detectReadonly asks the server whether the connection's user is
// readonly=1.
func (r *reader) detectReadonly(ctx context.Context) error {
	// Ask as a readonly user would have to: with no settings, which such
	// a user's server refuses to change.
	r.readonly = true
	qctx, cancel := r.ctx(ctx)
	defer cancel()
	rows, err := r.conn.Query(qctx, "SELECT value FROM system.settings WHERE name = 'readonly'")
	if err != nil {
		return fmt.Errorf("read the readonly setting from system.settings: %w", err)
	}
	defer rows.Close()
	var v string
	for rows.Next() {
		if err := rows.Scan(&v); err != nil {
			return fmt.Errorf("read the readonly setting: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the readonly setting: %w", err)
	}
	r.readonly = v == "1"
	return nil
}

// ctx returns the context of one query: cancelled after r.timeout and when
// ctx is. It has no deadline (a timer cancels it), so that the driver adds
// no max_execution_time of its own; unless the user is readonly=1 it
// carries max_execution_time explicitly, so the server stops the query
// too, not only the client.
func (r *reader) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	qctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	t := time.AfterFunc(r.timeout, cancel)
	if !r.readonly {
		secs := int(r.timeout.Round(time.Second) / time.Second)
		if secs < 1 {
			secs = 1
		}
		qctx = chconn.WithSettings(qctx, map[string]any{"max_execution_time": secs})
	}
	return qctx, func() {
		t.Stop()
		stop()
		cancel()
	}
}

// each runs one SELECT and calls scan for every row.
func (r *reader) each(ctx context.Context, what, sql string, args []any, scan func(chconn.Rows) error) error {
	qctx, cancel := r.ctx(ctx)
	defer cancel()
	rows, err := r.conn.Query(qctx, sql, args...)
	if err != nil {
		return r.wrap(ctx, qctx, what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return r.wrap(ctx, qctx, what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return r.wrap(ctx, qctx, what, err)
	}
	return nil
}

// wrap names the read that failed; a query cut by the server's timeout
// becomes a timeoutError (HTTP 504).
func (r *reader) wrap(parent, qctx context.Context, what string, err error) error {
	if parent.Err() == nil && qctx.Err() != nil {
		return &timeoutError{what: what, after: r.timeout}
	}
	return fmt.Errorf("read %s from ClickHouse database %s: %w", what, r.db, err)
}

// timeoutError is a read cut by the query timeout.
type timeoutError struct {
	what  string
	after time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("reading %s took longer than the query timeout of %v: narrow the filter (fewer pipelines or dates) or raise --query-timeout", e.what, e.after)
}

// dateRange is an inclusive range of business dates; both set.
type dateRange struct{ from, to model.Date }

// storedRow is the latest stored diagnosis of a batch, as lists use it.
type storedRow struct {
	status, verdict, firstMissing string
	asOfMs                        int64
}

// storedRows reads the latest stored diagnosis of every batch of pipeline
// ("" for all) over dr (store/judgements has the SQL: argMax by as-of,
// never FINAL).
func (r *reader) storedRows(ctx context.Context, pipeline string, dr dateRange) (map[model.BatchKey]storedRow, error) {
	q, err := judgements.SelectDiagnoses(r.db, pipeline, dr.from, dr.to)
	if err != nil {
		return nil, err
	}
	out := make(map[model.BatchKey]storedRow)
	err = r.each(ctx, "stored diagnoses", q.SQL, q.Args, func(rows chconn.Rows) error {
		k, d, err := judgements.ScanDiagnosis(rows)
		if err != nil {
			return err
		}
		out[k] = storedRow{status: d.Status, verdict: d.Verdict, firstMissing: d.FirstMissing, asOfMs: d.AsOfMS}
		return nil
	})
	return out, err
}

// storedDiagnosis returns the JSON of the latest stored diagnosis of k, or
// nil when there is none.
func (r *reader) storedDiagnosis(ctx context.Context, k model.BatchKey) ([]byte, error) {
	q, err := judgements.SelectDiagnosis(r.db, k)
	if err != nil {
		return nil, err
	}
	var out []byte
	err = r.each(ctx, "the stored diagnosis", q.SQL, q.Args, func(rows chconn.Rows) error {
		out, err = judgements.ScanDiagnosisJSON(rows)
		return err
	})
	return out, err
}

// Finding is the latest state of one finding of the streaming detector
// (the analyzer's detect.Finding, read by store/judgements), with what the
// API adds to it.
type Finding struct {
	detect.Finding
	// AgeSeconds is how long the finding has been open (until it was
	// resolved, for a resolved one), as of the request.
	AgeSeconds int64
	// AsOf is the request's time, to which the lateness of an open
	// finding is counted (findings.Late), as in `handoff findings`.
	AsOf time.Time
	// Zone is the pipeline's contract zone, shown beside UTC on the page.
	Zone *time.Location
	// URL is the batch's web page.
	URL string
}

// MarshalJSON writes the finding as the listings do (findings.AppendJSON)
// with age_seconds and url added.
func (f Finding) MarshalJSON() ([]byte, error) {
	b := findings.AppendJSON(nil, &f.Finding, f.AsOf)
	b = append(b[:len(b)-1], `,"age_seconds":`...)
	b = strconv.AppendInt(b, f.AgeSeconds, 10)
	b = append(b, `,"url":`...)
	b = model.AppendJSONString(b, f.URL)
	return append(b, '}'), nil
}

// findings reads the latest state of every finding f selects, open first,
// then oldest raised first, at most limit (store/judgements has the SQL).
func (r *reader) findings(ctx context.Context, f findings.Filter, limit int) ([]Finding, error) {
	q, err := judgements.Select(r.db, f, judgements.ByRaised, limit)
	if err != nil {
		return nil, err
	}
	var out []Finding
	err = r.each(ctx, "findings", q.SQL, q.Args, func(rows chconn.Rows) error {
		fd, err := judgements.Scan(rows)
		if err != nil {
			return err
		}
		out = append(out, Finding{Finding: fd, URL: batchPath(fd.Batch)})
		return nil
	})
	return out, err
}

// findingNames reads the name of every finding f selects by its batch's
// key (the latest raised of a batch's, in findings' order), with nothing
// else of it (store/judgements has the SQL).
func (r *reader) findingNames(ctx context.Context, f findings.Filter) (map[string]string, error) {
	q, err := judgements.SelectNames(r.db, f)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	err = r.each(ctx, "findings", q.SQL, q.Args, func(rows chconn.Rows) error {
		k, name, err := judgements.ScanName(rows)
		if err != nil {
			return err
		}
		out[k.String()] = name
		return nil
	})
	return out, err
}

// ping checks that the database's tables answer, for /healthz.
func (r *reader) ping(ctx context.Context) error {
	return r.each(ctx, "health", "SELECT count() FROM system.tables WHERE database = ? AND name = ?", []any{r.db, schema.Events}, func(rows chconn.Rows) error {
		var n uint64
		if err := rows.Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no table %s.events: has `handoff ingest` created the schema in this database?", r.db)
		}
		return nil
	})
}

// Package schema owns handoff's ClickHouse schema: the database, the raw
// events table (deduplicated by event_id), dead letters, diagnoses,
// findings, and the dashboard views over them. The tables' SQL lives in
// schema.sql (embedded), the views' in views.go; both are applied
// idempotently by Ensure; it runs on ClickHouse 18.16 and on current
// releases.
package schema

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

//go:embed schema.sql
var schemaSQL string

// DefaultDatabase is the database handoff uses unless configured otherwise.
const DefaultDatabase = "handoff"

// Table names.
const (
	Events      = "events"
	DeadLetters = "dead_letters"
	// Diagnoses and Findings are the revised tables (_v2): the first ones
	// could not be altered in place on 18.16 (schema.sql says why).
	Diagnoses = "diagnoses_v2"
	Findings  = "findings_v2"
	// EventsByDate is the batch events sorted by business date first,
	// kept by the materialized view EventsByDateView (bydate.go).
	EventsByDate     = "events_by_date"
	EventsByDateView = "events_by_date_mv"
	// EventsByDateCopied exists once the history stored before the view
	// is copied into EventsByDate (bydate.go).
	EventsByDateCopied = "events_by_date_copied"
)

// View names: dashboard views created by Ensure after the tables
// (views.go says what each shows; docs/dashboards.md has examples).
const (
	BatchProgress   = "batch_progress"
	DiagnosisLatest = "diagnosis_latest"
	BatchStatus     = "batch_status"
	FindingState    = "finding_state"
)

// AllTables returns the names of every table and view Ensure creates, in
// creation order.
func AllTables() []string {
	return append([]string{Events, EventsByDate, DeadLetters, Diagnoses, Findings, EventsByDateView, EventsByDateCopied}, Views()...)
}

var dbName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// MaxDatabaseLen is the longest database name CheckDatabase accepts: well
// under the file-name limit of the server's data directory.
const MaxDatabaseLen = 128

// CheckDatabase is the one validator of the identifiers handoff puts into
// SQL unquoted (the database name; table names are constants): letters,
// digits and underscores, not starting with a digit, at most
// MaxDatabaseLen bytes. Every reader and writer calls it before building a
// query, so a name like "db.events FINAL WHERE 1=1 --" never rewrites one.
func CheckDatabase(name string) error {
	if len(name) > MaxDatabaseLen {
		return fmt.Errorf("clickhouse database name %.20q... is %d bytes: use at most %d", name, len(name), MaxDatabaseLen)
	}
	if !dbName.MatchString(name) {
		return fmt.Errorf("clickhouse database name %q: use letters, digits and underscores only, not starting with a digit", name)
	}
	return nil
}

// Statements returns the schema's statements for database db on a single
// server, in order.
func Statements(db string) ([]string, error) {
	return StatementsFor(db, Layout{})
}

// tableStatements returns the statements of schema.sql, comments removed,
// with {db} still in them.
func tableStatements() []string {
	var out []string
	for _, part := range strings.Split(schemaSQL, "\n;\n") {
		var lines []string
		for _, l := range strings.Split(part, "\n") {
			if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "--") {
				continue
			}
			lines = append(lines, l)
		}
		if len(lines) == 0 {
			continue
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	return out
}

// Ensure creates the database db and its tables on a single server when
// missing (EnsureLayout for a cluster). It is safe to call on every start
// and concurrently from several processes.
func Ensure(ctx context.Context, conn driver.Conn, db string) error {
	return EnsureLayout(ctx, conn, db, Layout{})
}

package schema

import "strings"

// The column lists: the one place a column is named for Go code. Writers
// (store/writer, ingest/results) INSERT with the *Columns lists and append
// columns in their order (the *Rows types of rows.go); readers (store/history)
// SELECT with EventReadColumns and scan in its order (ScanEvent).
// TestColumnsMatchDDL checks every list against schema.sql, so a column
// renamed in the DDL and not here (or the other way round) fails a test,
// not an INSERT in production.

// EventColumns is the column list of every INSERT into events, in order:
// every stored (not MATERIALIZED) column, Nested as its sub-columns.
const EventColumns = EventReadColumns + ", ingested_ms, kafka_topic, kafka_partition, kafka_offset"

// EventReadColumns is the column list readers select from events to
// rebuild a model.Event (ScanEvent), in order.
const EventReadColumns = "pipeline, business_date, batch_id, event_id, spec, type, time_ms, system, component, object, " +
	"rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error, `attrs.key`, `attrs.value`"

// EventReplayColumns is EventReadColumns less what the replay never reads
// (spec, attrs): backfill selects it to read a fifth less
// (EventScanner.ReplayOnly).
const EventReplayColumns = "pipeline, business_date, batch_id, event_id, type, time_ms, system, component, object, " +
	"rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error"

// DeadLetterColumns is the column list of every INSERT into dead_letters.
const DeadLetterColumns = "received_ms, topic, kafka_partition, kafka_offset, key, reason, error, payload"

// DiagnosisColumns is the column list of every INSERT into diagnoses_v2.
const DiagnosisColumns = "pipeline, business_date, batch_id, batch, as_of_ms, status, verdict, first_missing, diagnosis, " +
	"ingested_ms, kafka_topic, kafka_partition, kafka_offset"

// FindingColumns is the column list of every INSERT into findings_v2.
const FindingColumns = "pipeline, business_date, batch_id, batch, fingerprint, seq, state, kind, name, " +
	"raised_ms, resolved_ms, deadline_ms, lateness_ms, reporting_delay_ms, resolution, superseded_by, severity, owner, root, `labels.key`, `labels.value`, " +
	"evidence_as_of_ms, status, verdict, first_missing, diagnosis, ingested_ms, kafka_topic, kafka_partition, kafka_offset, " +
	"events_partition, events_partitions"

// InsertColumns returns the INSERT column list of table (one of Events,
// DeadLetters, Diagnoses, Findings) split into names, without backquotes;
// nil for any other name.
func InsertColumns(table string) []string {
	var list string
	switch table {
	case Events:
		list = EventColumns
	case DeadLetters:
		list = DeadLetterColumns
	case Diagnoses:
		list = DiagnosisColumns
	case Findings:
		list = FindingColumns
	default:
		return nil
	}
	return SplitColumns(list)
}

// SplitColumns splits a column list into names, without backquotes.
func SplitColumns(list string) []string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), "`")
	}
	return parts
}

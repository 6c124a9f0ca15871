package schema

import "strings"

// The dashboard views (docs/dashboards.md). Ensure creates them after the
// tables (Statements), reading everything; query/dash reads the same
// SELECTs with its filter inside (ViewSelect), because a filter on a view
// does not reach the tables under a JOIN: on 18.16 a read of batch_status
// for one pipeline-month aggregated every stored diagnosis (1.4 s at
// 365,000 diagnoses, against 0.1 s with the filter inside).
//
// Each SELECT reads its tables with "WHERE ... ({where})": where is a
// condition on the columns pipeline and business_date (which every table
// under a view has); "1" in the views Ensure creates. CREATE VIEW IF NOT
// EXISTS never alters a view: a view whose SELECT changes needs a new name
// (like the _v2 tables), or readers of the old one keep its old SELECT.

// viewSelects are the views' SELECTs, by name, in creation order. {db} is
// the database; {where} the filter; {view:NAME} the SELECT of view NAME
// (with the same filter), inlined so one filter reaches every table.
var viewSelects = []struct{ name, sql string }{
	// batch_progress: one row per batch from its events alone, whatever is
	// in diagnoses_v2: when each boundary of the default ladder was first
	// proven (*_ms; 0 = never), how many distinct events the batch has,
	// and the verdict and first missing boundary the default ladder gives
	// (docs/diagnosis.md; a contract that drops boundaries is known only
	// to the stored diagnoses). Heartbeats (batch_id '') are not batches.
	// Copies of an event that merges have not collapsed yet change no
	// value: times are minima and counts are of distinct event ids.
	{BatchProgress, `SELECT
    pipeline,
    business_date,
    batch_id,
    uniqExact(event_id)                                               AS event_count,
    min(time_ms)                                                      AS first_event_ms,
    max(time_ms)                                                      AS last_event_ms,
    minIf(time_ms, type = 'job.succeeded')                            AS produced_ms,
    minIf(time_ms, type = 'artifact.finalized')                       AS finalized_ms,
    minIf(time_ms, type = 'signal.published')                         AS signaled_ms,
    minIf(time_ms, type = 'artifact.transferred')                     AS transferred_ms,
    minIf(time_ms, type IN ('signal.transferred', 'signal.restored')) AS signal_delivered_ms,
    minIf(time_ms, type = 'batch.identified')                         AS identified_ms,
    minIf(time_ms, type = 'consume.succeeded')                        AS consumed_ms,
    greatest(greatest(greatest(produced_ms, finalized_ms), greatest(signaled_ms, transferred_ms)),
             greatest(greatest(signal_delivered_ms, identified_ms), consumed_ms)) AS last_boundary_ms,
    argMax(type, time_ms)                                             AS last_event_type,
    multiIf(consumed_ms > 0, 'delivered',
            identified_ms > 0, 'not_consumed',
            transferred_ms > 0, 'not_identified',
            finalized_ms > 0, 'not_transferred',
            produced_ms > 0, 'not_final',
            'not_produced')                                           AS events_verdict,
    multiIf(produced_ms = 0, 'produced',
            finalized_ms = 0, 'finalized',
            signaled_ms = 0, 'signaled',
            transferred_ms = 0, 'transferred',
            signal_delivered_ms = 0, 'signal_delivered',
            identified_ms = 0, 'identified',
            consumed_ms = 0, 'consumed',
            '')                                                       AS events_first_missing
FROM {db}.events
WHERE batch_id != '' AND ({where})
GROUP BY pipeline, business_date, batch_id`},

	// diagnosis_latest: the latest stored diagnosis of every batch (highest
	// as_of_ms), read with argMax, never FINAL.
	{DiagnosisLatest, `SELECT
    pipeline,
    business_date,
    batch_id,
    max(as_of_ms)                   AS latest_as_of_ms,
    argMax(status, as_of_ms)        AS latest_status,
    argMax(verdict, as_of_ms)       AS latest_verdict,
    argMax(first_missing, as_of_ms) AS latest_first_missing,
    argMax(diagnosis, as_of_ms)     AS latest_diagnosis
FROM {db}.diagnoses_v2
WHERE ({where})
GROUP BY pipeline, business_date, batch_id`},

	// batch_status: every batch with events, with its status, verdict and
	// first missing boundary: from its latest stored diagnosis when there
	// is one (source 'diagnosis'), else from its events under the default
	// ladder (source 'events': delivered when consumed; failed when its
	// latest event is a *.failed; late when its latest boundary event is
	// more than 24 hours old, the default deadline of docs/diagnosis.md;
	// else in_progress). Anomalies need the replay: an events-only row is
	// never 'broken'.
	{BatchStatus, `SELECT
    pipeline,
    business_date,
    batch_id,
    if(latest_as_of_ms > 0, 'diagnosis', 'events')                      AS source,
    if(latest_as_of_ms > 0, latest_status,
       multiIf(consumed_ms > 0, 'delivered',
               endsWith(last_event_type, '.failed'), 'failed',
               toInt64(toUnixTimestamp(now())) * 1000 - greatest(last_boundary_ms, first_event_ms) > 86400000, 'late',
               'in_progress'))                                            AS status,
    if(latest_as_of_ms > 0, latest_verdict, events_verdict)             AS verdict,
    if(latest_as_of_ms > 0, latest_first_missing, events_first_missing) AS first_missing,
    latest_as_of_ms                                                     AS diagnosis_as_of_ms,
    event_count,
    first_event_ms,
    last_event_ms,
    produced_ms,
    finalized_ms,
    signaled_ms,
    transferred_ms,
    signal_delivered_ms,
    identified_ms,
    consumed_ms
FROM ({view:batch_progress}) AS progress
ALL LEFT JOIN ({view:diagnosis_latest}) AS diagnosis USING (pipeline, business_date, batch_id)`},

	// finding_state: the latest state of every finding (its record with the
	// highest seq), read with argMax, never FINAL.
	{FindingState, `SELECT
    fingerprint,
    any(pipeline)            AS finding_pipeline,
    any(business_date)       AS finding_business_date,
    any(batch_id)            AS finding_batch_id,
    any(batch)               AS finding_batch,
    any(kind)                AS finding_kind,
    any(name)                AS finding_name,
    max(seq)                 AS latest_seq,
    argMax(state, seq)       AS latest_state,
    argMax(status, seq)      AS latest_status,
    argMax(verdict, seq)     AS latest_verdict,
    argMax(severity, seq)    AS latest_severity,
    argMax(raised_ms, seq)   AS latest_raised_ms,
    argMax(resolved_ms, seq) AS latest_resolved_ms,
    argMax(deadline_ms, seq) AS latest_deadline_ms,
    argMax(lateness_ms, seq) AS latest_lateness_ms,
    min(raised_ms)           AS first_raised_ms
FROM {db}.findings_v2
WHERE ({where})
GROUP BY fingerprint`},
}

// Views returns the names of the dashboard views, in creation order.
func Views() []string {
	out := make([]string, len(viewSelects))
	for i, v := range viewSelects {
		out[i] = v.name
	}
	return out
}

// ViewSelect returns the SELECT of view name over database db (checked by
// the caller) with where, a condition on pipeline and business_date, applied
// to every table it reads; ok is false for an unknown view. where is SQL
// text: callers pass their own fixed text with `?` or markers for values,
// never request text.
func ViewSelect(db, name, where string) (string, bool) {
	for _, v := range viewSelects {
		if v.name != name {
			continue
		}
		sql := v.sql
		for _, o := range viewSelects {
			if strings.Contains(sql, "{view:"+o.name+"}") {
				inner, _ := ViewSelect(db, o.name, where)
				sql = strings.ReplaceAll(sql, "{view:"+o.name+"}", inner)
			}
		}
		return strings.NewReplacer("{db}", db, "{where}", where).Replace(sql), true
	}
	return "", false
}

// viewStatements returns the CREATE VIEW statements of database db; on is
// "" or " ON CLUSTER name".
func viewStatements(db, on string) []string {
	out := make([]string, 0, len(viewSelects))
	for _, v := range viewSelects {
		sql, _ := ViewSelect(db, v.name, "1")
		out = append(out, "CREATE VIEW IF NOT EXISTS "+db+"."+v.name+on+" AS\n"+sql)
	}
	return out
}

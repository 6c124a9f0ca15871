package dash

// The dashboard queries. Each SQL text names its parameters as {name}
// markers (and the database as {db}); Runner turns every marker into a `?`
// bound by clickhouse-go's client-side binding, so no request text is ever
// spliced into SQL. Derived markers: {from_ms} and {to_end_ms} are the
// from/to dates as Unix milliseconds (from at 00:00 UTC, to + 1 day at
// 00:00 UTC), for tables keyed by a millisecond time rather than a date.
// {now_ms} is the server's current time in milliseconds. {view:NAME} is
// the SELECT of the schema's view NAME (schema.ViewSelect) with the
// definition's where inside it, so the filter reaches the tables under
// the view (ClickHouse does not push it into the right side of a JOIN).
//
// Every query bounds its rows with LIMIT {limit} (DefaultLimit, at most
// MaxLimit) and, when it takes dates, its range (at most MaxDays days).

// Common parameters.
var (
	pFrom = Param{Name: "from", Type: ParamDate, Required: true,
		Doc: "first business date (YYYY-MM-DD), inclusive"}
	pTo = Param{Name: "to", Type: ParamDate, Required: true,
		Doc: "last business date (YYYY-MM-DD), inclusive; at most 366 days after from"}
	pPipeline = Param{Name: "pipeline", Type: ParamString, Default: "",
		Doc: "one pipeline; empty: all"}
	pLimit = Param{Name: "limit", Type: ParamInt, Default: "1000",
		Doc: "at most this many rows (1..10000)"}
)

// nowMS is the server's current time in Unix milliseconds.
const nowMS = "(toInt64(toUnixTimestamp(now())) * 1000)"

// pipelineRange filters by the pipeline parameter, all pipelines when it is
// empty, in a form ClickHouse's primary key analysis uses (18.16 does not
// use "(p = ” OR pipeline = p)": it read every pipeline's rows): a range
// whose bounds are constant expressions. No valid UTF-8 name sorts above
// the byte 0xFF.
const pipelineRange = "pipeline >= {pipeline} AND pipeline <= if({pipeline} = '', unhex('FF'), {pipeline})"

// dateRange filters the tables under a view by the date range and pipeline.
const dateRange = "business_date >= toDate({from}) AND business_date <= toDate({to}) AND " + pipelineRange

// definition is a Query with its SQL and the filter of the views it reads.
type definition struct {
	Query
	sql   string
	where string // a condition on pipeline and business_date, with markers
}

// pipelineOnly filters a view by the pipeline parameter alone.
const pipelineOnly = pipelineRange

var definitions = []definition{
	{Query{Name: "batch_status", Title: "Batch status by pipeline and business date",
		Doc: "One row per batch with events in the range: status, verdict and first missing boundary, " +
			"from the latest stored diagnosis (source diagnosis) or, when there is none, from the batch's events " +
			"under the default ladder (source events); batch is pipeline/date/id, as handoff serve's batch page names it.",
		Params: []Param{pFrom, pTo, pPipeline,
			{Name: "status", Type: ParamString, Doc: "only this status (delivered, late, failed, broken, in_progress); empty: all"},
			pLimit}},
		`SELECT pipeline, business_date, batch_id, status, verdict, first_missing, source, event_count, last_event_ms,
       concat(pipeline, '/', toString(business_date), '/', batch_id) AS batch
FROM {view:batch_status}
WHERE {status} = '' OR status = {status}
ORDER BY pipeline, business_date, batch_id
LIMIT {limit}`, dateRange},

	{Query{Name: "boundary_funnel", Title: "Boundary funnel",
		Doc: "Per pipeline: how many batches in the range reached each boundary of the default ladder " +
			"(an event proving it exists), from events only.",
		Params: []Param{pFrom, pTo, pPipeline, pLimit}},
		`SELECT pipeline, count() AS batches,
       countIf(produced_ms > 0) AS produced, countIf(finalized_ms > 0) AS finalized,
       countIf(signaled_ms > 0) AS signaled, countIf(transferred_ms > 0) AS transferred,
       countIf(signal_delivered_ms > 0) AS signal_delivered, countIf(identified_ms > 0) AS identified,
       countIf(consumed_ms > 0) AS consumed
FROM {view:batch_progress}
GROUP BY pipeline
ORDER BY pipeline
LIMIT {limit}`, dateRange},

	{Query{Name: "boundary_latency", Title: "Time between boundaries",
		Doc: "Per pipeline and boundary: milliseconds from the boundary proven just before it to this one, " +
			"in event order (each batch's first proving events sorted by time; a tie goes to the ladder's order), " +
			"so never negative: an artifact finalized before its job reported success gives a produced row after " +
			"finalized. The first boundary a batch reached has no row. p50/p90/p99 are exact quantiles.",
		Params: []Param{pFrom, pTo, pPipeline, pLimit}},
		`SELECT pipeline, gap.1 AS boundary, count() AS batches,
       toInt64(quantileExact(0.5)(gap.2)) AS p50_ms,
       toInt64(quantileExact(0.9)(gap.2)) AS p90_ms,
       toInt64(quantileExact(0.99)(gap.2)) AS p99_ms,
       max(gap.2) AS max_ms
FROM (
    SELECT pipeline,
           arraySort(x -> x.2 * 8 + x.3, arrayFilter(x -> x.2 > 0, [
               ('produced', produced_ms, 0), ('finalized', finalized_ms, 1), ('signaled', signaled_ms, 2),
               ('transferred', transferred_ms, 3), ('signal_delivered', signal_delivered_ms, 4),
               ('identified', identified_ms, 5), ('consumed', consumed_ms, 6)])) AS reached
    FROM {view:batch_progress}
)
ARRAY JOIN arrayMap((cur, prev) -> (cur.1, cur.2 - prev.2), arrayPopFront(reached), arrayPopBack(reached)) AS gap
GROUP BY pipeline, boundary
ORDER BY pipeline, indexOf(['produced', 'finalized', 'signaled', 'transferred', 'signal_delivered', 'identified', 'consumed'], boundary)
LIMIT {limit}`, dateRange},

	{Query{Name: "breaks_over_time", Title: "Breaks by verdict and first missing boundary",
		Doc: "Per business date: batches whose status is broken, failed or late, by verdict and first missing " +
			"boundary (in_progress and delivered batches are not breaks).",
		Params: []Param{pFrom, pTo, pPipeline, pLimit}},
		`SELECT business_date, verdict, first_missing, count() AS batches
FROM {view:batch_status}
WHERE status IN ('broken', 'failed', 'late')
GROUP BY business_date, verdict, first_missing
ORDER BY business_date, verdict, first_missing
LIMIT {limit}`, dateRange},

	{Query{Name: "anomalies_by_kind", Title: "Anomalies by kind",
		Doc: "Per anomaly kind: batches in the range whose latest stored diagnosis names it. " +
			"Needs diagnoses: a batch with none has no anomalies here.",
		Params: []Param{pFrom, pTo, pPipeline, pLimit}},
		`SELECT kind, count() AS batches, uniqExact(pipeline) AS pipelines,
       min(business_date) AS first_date, max(business_date) AS last_date
FROM (
    SELECT pipeline, business_date,
           arrayJoin(arrayDistinct(extractAll(latest_diagnosis, '"kind"\\s*:\\s*"([a-z_]+)"'))) AS kind
    FROM {view:diagnosis_latest}
)
GROUP BY kind
ORDER BY batches DESC, kind
LIMIT {limit}`, dateRange},

	{Query{Name: "success_not_delivered", Title: "Job SUCCESS but not delivered",
		Doc: "Per pipeline: batches whose job succeeded (produced proven), how many of them are not delivered " +
			"(verdict other than delivered; still in progress counted apart too) and the rate.",
		Params: []Param{pFrom, pTo, pPipeline, pLimit}},
		`SELECT pipeline,
       countIf(produced_ms > 0) AS job_succeeded,
       countIf(produced_ms > 0 AND verdict != 'delivered') AS not_delivered,
       countIf(produced_ms > 0 AND verdict != 'delivered' AND status = 'in_progress') AS in_progress,
       if(job_succeeded = 0, 0, round(not_delivered / job_succeeded, 4)) AS not_delivered_rate
FROM {view:batch_status}
GROUP BY pipeline
ORDER BY pipeline
LIMIT {limit}`, dateRange},

	{Query{Name: "open_findings", Title: "Open findings and their age",
		Doc: "Findings of the streaming detector whose latest record is open, oldest first, with their age " +
			"(now minus the latest record's raised time). Empty until handoff detect publishes findings.",
		Params: []Param{pPipeline,
			{Name: "min_age", Type: ParamDuration, Default: "0s", Doc: "only findings at least this old (Go duration, e.g. 90m, 48h; at most 8784h)"},
			pLimit}},
		`SELECT finding_batch AS batch, finding_kind AS kind, finding_name AS name,
       latest_status AS status, latest_verdict AS verdict, latest_severity AS severity,
       latest_raised_ms AS raised_ms, intDiv({now_ms} - latest_raised_ms, 1000) AS age_s
FROM {view:finding_state}
WHERE latest_state = 'open' AND {now_ms} - latest_raised_ms >= {min_age}
ORDER BY latest_raised_ms, batch, kind, name
LIMIT {limit}`, pipelineOnly},

	{Query{Name: "late_deliveries", Title: "Late deliveries and by how much",
		Doc: "Findings with a lateness (a boundary past its contract deadline), open or resolved, by lateness. " +
			"Empty until handoff detect publishes findings; before that batch_status lists late batches.",
		Params: []Param{pFrom, pTo, pPipeline,
			{Name: "min_lateness", Type: ParamDuration, Default: "0s", Doc: "only lateness at least this (Go duration)"},
			pLimit}},
		`SELECT finding_batch AS batch, finding_name AS boundary, latest_state AS state,
       latest_deadline_ms AS deadline_ms, latest_lateness_ms AS lateness_ms, latest_resolved_ms AS resolved_ms
FROM {view:finding_state}
WHERE latest_lateness_ms > 0 AND latest_lateness_ms >= {min_lateness}
ORDER BY lateness_ms DESC, batch, boundary
LIMIT {limit}`, dateRange},

	{Query{Name: "lateness_by_day", Title: "Lateness by business date",
		Doc: "Per business date and pipeline: the largest lateness of a finding (a boundary past its contract " +
			"deadline, open or resolved), in milliseconds. Empty until handoff detect publishes findings.",
		Params: []Param{pFrom, pTo, pPipeline, pLimit}},
		`SELECT finding_business_date AS business_date, finding_pipeline AS pipeline,
       max(latest_lateness_ms) AS max_lateness_ms
FROM {view:finding_state}
WHERE latest_lateness_ms > 0
GROUP BY business_date, pipeline
ORDER BY business_date, pipeline
LIMIT {limit}`, dateRange},

	{Query{Name: "dead_letters_by_reason", Title: "Dead letters by reason",
		Doc: "Rejected messages received in the range (UTC days of received time), by reason and source topic: " +
			"distinct messages, first and last received, one example error.",
		Params: []Param{
			{Name: "from", Type: ParamDate, Required: true, Doc: "first UTC day of receipt, inclusive"},
			{Name: "to", Type: ParamDate, Required: true, Doc: "last UTC day of receipt, inclusive; at most 366 days after from"},
			pLimit}},
		`SELECT reason, topic, uniqExact(topic, kafka_partition, kafka_offset) AS messages,
       min(received_ms) AS first_ms, max(received_ms) AS last_ms, any(error) AS example_error
FROM {db}.dead_letters
WHERE received_ms >= {from_ms} AND received_ms < {to_end_ms}
GROUP BY reason, topic
ORDER BY messages DESC, reason, topic
LIMIT {limit}`, ""},

	{Query{Name: "freshness", Title: "Ingest and detector freshness",
		Doc: "When each table last received a row (ingested_ms; received_ms for dead letters), and the latest " +
			"heartbeat of every process (pipeline handoff.detect is the detector), with the age in seconds " +
			"(-1: never).",
		Params: []Param{pLimit}},
		`SELECT source, pipeline, component, last_ms, if(last_ms > 0, intDiv({now_ms} - last_ms, 1000), -1) AS age_s
FROM (
    SELECT 'events' AS source, '' AS pipeline, '' AS component, toInt64(max(ingested_ms)) AS last_ms FROM {db}.events
    UNION ALL
    SELECT 'dead_letters' AS source, '' AS pipeline, '' AS component, toInt64(max(received_ms)) AS last_ms FROM {db}.dead_letters
    UNION ALL
    SELECT 'diagnoses' AS source, '' AS pipeline, '' AS component, toInt64(max(ingested_ms)) AS last_ms FROM {db}.diagnoses_v2
    UNION ALL
    SELECT 'findings' AS source, '' AS pipeline, '' AS component, toInt64(max(ingested_ms)) AS last_ms FROM {db}.findings_v2
    UNION ALL
    SELECT 'heartbeat' AS source, pipeline, component, toInt64(max(time_ms)) AS last_ms FROM {db}.events
    WHERE business_date = toDate('1970-01-01') AND batch_id = '' AND type = 'process.heartbeat'
    GROUP BY pipeline, component
)
ORDER BY source, pipeline, component
LIMIT {limit}`, ""},

	{Query{Name: "pipelines", Title: "Pipelines",
		Doc:    "The pipelines with batch events in the range, by name: the Grafana dashboard's pipeline variable.",
		Params: []Param{pFrom, pTo, pLimit}},
		`SELECT pipeline
FROM {db}.events
WHERE business_date >= toDate({from}) AND business_date <= toDate({to}) AND batch_id != ''
GROUP BY pipeline
ORDER BY pipeline
LIMIT {limit}`, ""},
}

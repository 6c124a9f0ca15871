-- handoff ClickHouse schema. The one place the tables are defined; applied
-- idempotently by schema.Ensure (ingest/schema) on every start of
-- `handoff ingest`. {db} is replaced by the configured database name.
--
-- Portability (design.md section 8): runs on ClickHouse 18.16 and current
-- releases. No LowCardinality, DateTime64, Map, JSON functions or TTL.
-- Millisecond times are Int64 (*_ms); DateTime columns are MATERIALIZED from
-- them, so INSERTs name only the stored columns.
--
-- Statements are separated by a line holding only ";".

CREATE DATABASE IF NOT EXISTS {db}
;

-- Raw delivery events, one row per event_id (after merges; read with FINAL
-- to see exactly one row per event before merges happen).
--
-- Dedupe: ReplacingMergeTree keyed by the sort key, which ends in event_id.
-- A redelivered event has the same identity and event_id, so it collapses
-- into one row; the version column ingested_ms keeps the latest copy.
--
-- Heartbeats (process.heartbeat) carry no batch identity: they are stored
-- with business_date = 1970-01-01 (the zero Date) and batch_id = '', so they
-- sort first within their pipeline and live in partition 197001.
CREATE TABLE IF NOT EXISTS {db}.events (
    pipeline        String,
    business_date   Date,
    batch_id        String,
    event_id        String,
    spec            String,
    type            String,
    time_ms         Int64,
    time            DateTime MATERIALIZED toDateTime(intDiv(time_ms, 1000)),
    event_date      Date MATERIALIZED toDate(toDateTime(intDiv(time_ms, 1000))),
    system          String,
    component       String,
    object          String,
    rows            Int64,
    has_rows        UInt8,
    bytes           Int64,
    has_bytes       UInt8,
    checksum        String,
    attempt         Int64,
    has_attempt     UInt8,
    error           String,
    attrs           Nested(key String, value String),
    ingested_ms     Int64,
    ingested        DateTime MATERIALIZED toDateTime(intDiv(ingested_ms, 1000)),
    kafka_topic     String,
    kafka_partition Int32,
    kafka_offset    Int64
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, event_id)
;

-- Messages the ingester rejected. The same message is also written to the
-- dead-letter topic. One row per source message (topic, partition, offset):
-- a message redelivered after a crash collapses into one row.
CREATE TABLE IF NOT EXISTS {db}.dead_letters (
    received_ms     Int64,
    received        DateTime MATERIALIZED toDateTime(intDiv(received_ms, 1000)),
    topic           String,
    kafka_partition Int32,
    kafka_offset    Int64,
    key             String,
    reason          String,
    error           String,
    payload         String
) ENGINE = ReplacingMergeTree(received_ms)
PARTITION BY toYYYYMM(toDate(toDateTime(intDiv(received_ms, 1000))))
ORDER BY (topic, kafka_partition, kafka_offset)
;

-- Diagnoses and findings are written by `handoff ingest` from the Kafka
-- topics handoff.diagnoses and handoff.findings (ingest/results). Their first
-- tables (`diagnoses`, `findings`, never written by any release) had no
-- Kafka position and the wrong engine and key for a finding's lifecycle;
-- CREATE TABLE IF NOT EXISTS does not alter an existing table and 18.16 has
-- no ALTER TABLE ... ADD COLUMN IF NOT EXISTS, so the revised tables have
-- new names (_v2) and the old ones are left alone (empty; drop them by hand).
--
-- Both are ReplacingMergeTree: a record delivered again (a crash between
-- INSERT and offset commit, a publisher retrying) has the same sort key and
-- collapses. Reads must not need FINAL: read the latest row per key with
-- argMax (docs/ingest.md, "Findings and diagnoses").

-- Diagnoses: one row per batch and as-of time (the replay is a pure function
-- of events, contract and as-of, so two copies for the same key are equal).
-- diagnosis is the analyzer's JSON (replay.Diagnosis.AppendJSON) as received;
-- status, verdict and first_missing are copied out of it for dashboards.
CREATE TABLE IF NOT EXISTS {db}.diagnoses_v2 (
    pipeline        String,
    business_date   Date,
    batch_id        String,
    batch           String,
    as_of_ms        Int64,
    as_of           DateTime MATERIALIZED toDateTime(intDiv(as_of_ms, 1000)),
    status          String,
    verdict         String,
    first_missing   String,
    diagnosis       String,
    ingested_ms     Int64,
    ingested        DateTime MATERIALIZED toDateTime(intDiv(ingested_ms, 1000)),
    kafka_topic     String,
    kafka_partition Int32,
    kafka_offset    Int64
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, as_of_ms)
;

-- Findings: the lifecycle records of the streaming detector (analyzer/detect),
-- one row per record: a finding (fingerprint) is opened (seq 1), re-published
-- when its batch's status changes while open, resolved, and may reopen, each
-- time with seq + 1. Each (fingerprint, seq) is published once, so the sort
-- key ends in it and a redelivered copy collapses; every record is kept as
-- the finding's history. The latest state of a finding is its record with
-- the highest seq: argMax(state, seq) GROUP BY fingerprint. A resolved
-- record keeps deadline_ms and lateness_ms (it was late, by how much).
-- 0 in resolved_ms and deadline_ms means "none".
CREATE TABLE IF NOT EXISTS {db}.findings_v2 (
    pipeline          String,
    business_date     Date,
    batch_id          String,
    batch             String,
    fingerprint       String,
    seq               UInt32,
    state             Enum8('open' = 1, 'resolved' = 2),
    kind              String,
    name              String,
    raised_ms         Int64,
    raised            DateTime MATERIALIZED toDateTime(intDiv(raised_ms, 1000)),
    resolved_ms       Int64,
    deadline_ms       Int64,
    lateness_ms       Int64,
    severity          String,
    owner             String,
    labels            Nested(key String, value String),
    evidence_as_of_ms Int64,
    status            String,
    verdict           String,
    first_missing     String,
    diagnosis         String,
    ingested_ms       Int64,
    kafka_topic       String,
    kafka_partition   Int32,
    kafka_offset      Int64
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, fingerprint, seq)
;

-- Views for dashboards (query/dash, deploy/grafana, docs/dashboards.md).
-- They hold no data: each is a SELECT over the tables above, evaluated when
-- read. CREATE VIEW IF NOT EXISTS never alters an existing view, so a view
-- whose SELECT changes gets a new name (like the _v2 tables), and the old
-- one is left for its readers. Reads of a view filter with WHERE on the
-- view's columns; query/dash runs them with enable_optimize_predicate_expression
-- so the filter reaches the tables' sort key.
--
-- batch_progress: one row per batch from its events alone, whatever is in
-- diagnoses_v2: when each boundary of the default ladder was first proven
-- (*_ms; 0 = never), how many distinct events the batch has, and the
-- verdict and first missing boundary the default ladder gives (design.md
-- section 2; a contract that drops boundaries is known only to the stored
-- diagnoses). Heartbeats (batch_id '') are not batches. Copies of an event
-- that merges have not collapsed yet change no value: times are minima and
-- counts are of distinct event ids.
CREATE VIEW IF NOT EXISTS {db}.batch_progress AS
SELECT
    pipeline,
    business_date,
    batch_id,
    uniqExact(event_id)                                                    AS event_count,
    min(time_ms)                                                           AS first_event_ms,
    max(time_ms)                                                           AS last_event_ms,
    minIf(time_ms, type = 'job.succeeded')                                 AS produced_ms,
    minIf(time_ms, type = 'artifact.finalized')                            AS finalized_ms,
    minIf(time_ms, type = 'signal.published')                              AS signaled_ms,
    minIf(time_ms, type = 'artifact.transferred')                          AS transferred_ms,
    minIf(time_ms, type IN ('signal.transferred', 'signal.restored'))      AS signal_delivered_ms,
    minIf(time_ms, type = 'batch.identified')                              AS identified_ms,
    minIf(time_ms, type = 'consume.succeeded')                             AS consumed_ms,
    greatest(greatest(greatest(produced_ms, finalized_ms), greatest(signaled_ms, transferred_ms)),
             greatest(greatest(signal_delivered_ms, identified_ms), consumed_ms)) AS last_boundary_ms,
    argMax(type, time_ms)                                                  AS last_event_type,
    multiIf(consumed_ms > 0, 'delivered',
            identified_ms > 0, 'not_consumed',
            transferred_ms > 0, 'not_identified',
            finalized_ms > 0, 'not_transferred',
            produced_ms > 0, 'not_final',
            'not_produced')                                                AS events_verdict,
    multiIf(produced_ms = 0, 'produced',
            finalized_ms = 0, 'finalized',
            signaled_ms = 0, 'signaled',
            transferred_ms = 0, 'transferred',
            signal_delivered_ms = 0, 'signal_delivered',
            identified_ms = 0, 'identified',
            consumed_ms = 0, 'consumed',
            '')                                                            AS events_first_missing
FROM {db}.events
WHERE batch_id != ''
GROUP BY pipeline, business_date, batch_id
;

-- diagnosis_latest: the latest stored diagnosis of every batch (highest
-- as_of_ms), read with argMax, never FINAL.
CREATE VIEW IF NOT EXISTS {db}.diagnosis_latest AS
SELECT
    pipeline,
    business_date,
    batch_id,
    max(as_of_ms)                   AS latest_as_of_ms,
    argMax(status, as_of_ms)        AS latest_status,
    argMax(verdict, as_of_ms)       AS latest_verdict,
    argMax(first_missing, as_of_ms) AS latest_first_missing,
    argMax(diagnosis, as_of_ms)     AS latest_diagnosis
FROM {db}.diagnoses_v2
GROUP BY pipeline, business_date, batch_id
;

-- batch_status: every batch with events, with its status, verdict and first
-- missing boundary: from its latest stored diagnosis when there is one
-- (source 'diagnosis'), else from its events under the default ladder
-- (source 'events': delivered when consumed; failed when its latest event
-- is a *.failed; late when its latest boundary event is more than 24 hours
-- old, the default deadline of design.md section 5; else in_progress).
-- Anomalies need the replay: an events-only row is never 'broken'.
CREATE VIEW IF NOT EXISTS {db}.batch_status AS
SELECT
    pipeline,
    business_date,
    batch_id,
    if(latest_as_of_ms > 0, 'diagnosis', 'events') AS source,
    if(latest_as_of_ms > 0, latest_status,
       multiIf(consumed_ms > 0, 'delivered',
               endsWith(last_event_type, '.failed'), 'failed',
               toInt64(toUnixTimestamp(now())) * 1000 - greatest(last_boundary_ms, first_event_ms) > 86400000, 'late',
               'in_progress'))                                   AS status,
    if(latest_as_of_ms > 0, latest_verdict, events_verdict)       AS verdict,
    if(latest_as_of_ms > 0, latest_first_missing, events_first_missing) AS first_missing,
    latest_as_of_ms                                               AS diagnosis_as_of_ms,
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
FROM {db}.batch_progress
ALL LEFT JOIN {db}.diagnosis_latest USING (pipeline, business_date, batch_id)
;

-- finding_state: the latest state of every finding (its record with the
-- highest seq), read with argMax, never FINAL.
CREATE VIEW IF NOT EXISTS {db}.finding_state AS
SELECT
    fingerprint,
    any(pipeline)              AS finding_pipeline,
    any(business_date)         AS finding_business_date,
    any(batch_id)              AS finding_batch_id,
    any(batch)                 AS finding_batch,
    any(kind)                  AS finding_kind,
    any(name)                  AS finding_name,
    max(seq)                   AS latest_seq,
    argMax(state, seq)         AS latest_state,
    argMax(status, seq)        AS latest_status,
    argMax(verdict, seq)       AS latest_verdict,
    argMax(severity, seq)      AS latest_severity,
    argMax(raised_ms, seq)     AS latest_raised_ms,
    argMax(resolved_ms, seq)   AS latest_resolved_ms,
    argMax(deadline_ms, seq)   AS latest_deadline_ms,
    argMax(lateness_ms, seq)   AS latest_lateness_ms,
    min(raised_ms)             AS first_raised_ms
FROM {db}.findings_v2
GROUP BY fingerprint

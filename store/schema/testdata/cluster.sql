CREATE DATABASE IF NOT EXISTS handoff ON CLUSTER handoff_cluster
;

CREATE TABLE IF NOT EXISTS handoff.events_local ON CLUSTER handoff_cluster (
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
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/handoff/events_local', '{replica}', ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, event_id)
;

CREATE TABLE IF NOT EXISTS handoff.events ON CLUSTER handoff_cluster (
    pipeline        String,
    business_date   Date,
    batch_id        String,
    event_id        String,
    spec            String,
    type            String,
    time_ms         Int64,
    time            DateTime ALIAS toDateTime(intDiv(time_ms, 1000)),
    event_date      Date ALIAS toDate(toDateTime(intDiv(time_ms, 1000))),
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
    ingested        DateTime ALIAS toDateTime(intDiv(ingested_ms, 1000)),
    kafka_topic     String,
    kafka_partition Int32,
    kafka_offset    Int64
) ENGINE = Distributed(handoff_cluster, handoff, events_local, cityHash64(pipeline, business_date, batch_id))
;

CREATE TABLE IF NOT EXISTS handoff.events_by_date_local ON CLUSTER handoff_cluster (
    business_date   Date,
    pipeline        String,
    batch_id        String,
    event_id        String,
    type            String,
    time_ms         Int64,
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
    ingested_ms     Int64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/handoff/events_by_date_local', '{replica}', ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (business_date, pipeline, batch_id, event_id)
;

CREATE TABLE IF NOT EXISTS handoff.events_by_date ON CLUSTER handoff_cluster (
    business_date   Date,
    pipeline        String,
    batch_id        String,
    event_id        String,
    type            String,
    time_ms         Int64,
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
    ingested_ms     Int64
) ENGINE = Distributed(handoff_cluster, handoff, events_by_date_local, cityHash64(pipeline, business_date, batch_id))
;

CREATE TABLE IF NOT EXISTS handoff.dead_letters_local ON CLUSTER handoff_cluster (
    received_ms     Int64,
    received        DateTime MATERIALIZED toDateTime(intDiv(received_ms, 1000)),
    topic           String,
    kafka_partition Int32,
    kafka_offset    Int64,
    key             String,
    reason          String,
    error           String,
    payload         String
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/handoff/dead_letters_local', '{replica}', received_ms)
PARTITION BY toYYYYMM(toDate(toDateTime(intDiv(received_ms, 1000))))
ORDER BY (topic, kafka_partition, kafka_offset)
;

CREATE TABLE IF NOT EXISTS handoff.dead_letters ON CLUSTER handoff_cluster (
    received_ms     Int64,
    received        DateTime ALIAS toDateTime(intDiv(received_ms, 1000)),
    topic           String,
    kafka_partition Int32,
    kafka_offset    Int64,
    key             String,
    reason          String,
    error           String,
    payload         String
) ENGINE = Distributed(handoff_cluster, handoff, dead_letters_local, cityHash64(topic, kafka_partition, kafka_offset))
;

CREATE TABLE IF NOT EXISTS handoff.diagnoses_v2_local ON CLUSTER handoff_cluster (
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
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/handoff/diagnoses_v2_local', '{replica}', ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, as_of_ms)
;

CREATE TABLE IF NOT EXISTS handoff.diagnoses_v2 ON CLUSTER handoff_cluster (
    pipeline        String,
    business_date   Date,
    batch_id        String,
    batch           String,
    as_of_ms        Int64,
    as_of           DateTime ALIAS toDateTime(intDiv(as_of_ms, 1000)),
    status          String,
    verdict         String,
    first_missing   String,
    diagnosis       String,
    ingested_ms     Int64,
    ingested        DateTime ALIAS toDateTime(intDiv(ingested_ms, 1000)),
    kafka_topic     String,
    kafka_partition Int32,
    kafka_offset    Int64
) ENGINE = Distributed(handoff_cluster, handoff, diagnoses_v2_local, cityHash64(pipeline, business_date, batch_id))
;

CREATE TABLE IF NOT EXISTS handoff.findings_v2_local ON CLUSTER handoff_cluster (
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
    reporting_delay_ms Int64 DEFAULT 0,
    resolution        String DEFAULT '',
    superseded_by     String DEFAULT '',
    severity          String,
    owner             String,
    root              String DEFAULT '',
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
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/handoff/findings_v2_local', '{replica}', ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, fingerprint, seq)
;

CREATE TABLE IF NOT EXISTS handoff.findings_v2 ON CLUSTER handoff_cluster (
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
    raised            DateTime ALIAS toDateTime(intDiv(raised_ms, 1000)),
    resolved_ms       Int64,
    deadline_ms       Int64,
    lateness_ms       Int64,
    reporting_delay_ms Int64 DEFAULT 0,
    resolution        String DEFAULT '',
    superseded_by     String DEFAULT '',
    severity          String,
    owner             String,
    root              String DEFAULT '',
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
) ENGINE = Distributed(handoff_cluster, handoff, findings_v2_local, cityHash64(pipeline, business_date, batch_id))
;

CREATE MATERIALIZED VIEW IF NOT EXISTS handoff.events_by_date_mv ON CLUSTER handoff_cluster TO handoff.events_by_date_local AS SELECT business_date, pipeline, batch_id, event_id, type, time_ms, system, component, object, rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error, ingested_ms FROM handoff.events_local WHERE batch_id != ''
;

CREATE VIEW IF NOT EXISTS handoff.batch_progress ON CLUSTER handoff_cluster AS
SELECT
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
FROM handoff.events
WHERE batch_id != '' AND (1)
GROUP BY pipeline, business_date, batch_id
;

CREATE VIEW IF NOT EXISTS handoff.diagnosis_latest ON CLUSTER handoff_cluster AS
SELECT
    pipeline,
    business_date,
    batch_id,
    max(as_of_ms)                   AS latest_as_of_ms,
    argMax(status, as_of_ms)        AS latest_status,
    argMax(verdict, as_of_ms)       AS latest_verdict,
    argMax(first_missing, as_of_ms) AS latest_first_missing,
    argMax(diagnosis, as_of_ms)     AS latest_diagnosis
FROM handoff.diagnoses_v2
WHERE (1)
GROUP BY pipeline, business_date, batch_id
;

CREATE VIEW IF NOT EXISTS handoff.batch_status ON CLUSTER handoff_cluster AS
SELECT
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
FROM (SELECT
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
FROM handoff.events
WHERE batch_id != '' AND (1)
GROUP BY pipeline, business_date, batch_id) AS progress
ALL LEFT JOIN (SELECT
    pipeline,
    business_date,
    batch_id,
    max(as_of_ms)                   AS latest_as_of_ms,
    argMax(status, as_of_ms)        AS latest_status,
    argMax(verdict, as_of_ms)       AS latest_verdict,
    argMax(first_missing, as_of_ms) AS latest_first_missing,
    argMax(diagnosis, as_of_ms)     AS latest_diagnosis
FROM handoff.diagnoses_v2
WHERE (1)
GROUP BY pipeline, business_date, batch_id) AS diagnosis USING (pipeline, business_date, batch_id)
;

CREATE VIEW IF NOT EXISTS handoff.finding_state ON CLUSTER handoff_cluster AS
SELECT
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
FROM handoff.findings_v2
WHERE (1)
GROUP BY fingerprint
;

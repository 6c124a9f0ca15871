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

-- Diagnoses: one row per batch and as-of time, the diagnosis as JSON (the
-- analyzer's machine-readable format) plus the fields dashboards filter on.
CREATE TABLE IF NOT EXISTS {db}.diagnoses (
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
    computed_ms     Int64
) ENGINE = ReplacingMergeTree(computed_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, as_of_ms)
;

-- Findings: what the streaming detector reported and when (a batch turned
-- late, broken, delivered...). Append-only history.
CREATE TABLE IF NOT EXISTS {db}.findings (
    found_ms        Int64,
    found           DateTime MATERIALIZED toDateTime(intDiv(found_ms, 1000)),
    pipeline        String,
    business_date   Date,
    batch_id        String,
    batch           String,
    kind            String,
    status          String,
    first_missing   String,
    detail          String,
    diagnosis       String
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, found_ms)
;

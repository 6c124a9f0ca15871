-- handoff ClickHouse schema. The one place the tables are defined; applied
-- idempotently by schema.Ensure (store/schema) on every start of
-- `handoff ingest`. {db} is replaced by the configured database name.
--
-- Portability (docs/testing.md): runs on ClickHouse 18.16 and current
-- releases. No LowCardinality, DateTime64, Map, JSON functions or TTL.
-- Millisecond times are Int64 (*_ms); DateTime columns are MATERIALIZED from
-- them, so INSERTs name only the stored columns.
--
-- Statements are separated by a line holding only ";". The dashboard views
-- follow these statements; they are in views.go, because query/dash reads
-- them with its filter inside (ClickHouse does not push a filter into the
-- right side of a JOIN).

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

-- The batch events again, sorted by business date first: what a read of
-- one date across every pipeline (the serve grid's all-pipelines day)
-- needs, which the events table, sorted by pipeline first, can only answer
-- by reading every row of the date's month. Only the columns the replay
-- reads (not spec, attrs or the Kafka position), no heartbeats. Written by
-- ClickHouse itself: the materialized view events_by_date_mv (bydate.go)
-- copies every block inserted into events, and Ensure copies the rows
-- stored before the view existed. Copies of an event collapse as in events
-- (same identity, same ingested_ms), and readers skip them as there.
CREATE TABLE IF NOT EXISTS {db}.events_by_date (
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
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (business_date, pipeline, batch_id, event_id)
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
-- 0 in resolved_ms and deadline_ms means "none". A resolved record that did
-- not end the plain way says how in resolution ("superseded by <batch>", "on
-- time (...), reported late by 7m"), with the attempt that replaced it in
-- superseded_by and the reporting delay in reporting_delay_ms (0, '' and ''
-- otherwise: their defaults, which rows stored before they existed read as).
-- Columns added to a table after its first release are added to an existing
-- table by Ensure (upgrade.go), at the place they have here.
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
    reporting_delay_ms Int64 DEFAULT 0,
    resolution        String DEFAULT '',
    superseded_by     String DEFAULT '',
    severity          String,
    owner             String,
    -- the incident: the fingerprint of the root batch that blocks this one, or of its own batch
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
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, fingerprint, seq)

// Package detect is the streaming detector's engine: it folds
// delivery events into one replay.State per open batch as they arrive
// (packed into a string of its own once the batch has gone quiet), keeps a deadline timer per batch from its contract, watches the batches
// the contracts' schedules expect, and turns what the diagnoses show into
// findings with a lifecycle (open, resolved), in the manner of
// Alertmanager alerts.
//
// It is pure: no I/O, no goroutines, no clock. Events come in through
// Detector.Observe and time through Detector.Advance(now, safe), where
// safe is the time up to which the caller has folded every event of the
// topic; only deadlines at or before safe fire, so the detector's own lag
// never raises a finding. Each batch is diagnosed with the same
// replay.State.Evaluate and the same continuity and heartbeat context
// (analyzer/batches) as `handoff diagnose`, so the detector's diagnosis of
// a batch equals diagnose's on the same events as of the same time.
//
// With Config.Baselines it also learns each pipeline's arrivals from the
// events it observes (analyzer/learn) and raises early warnings, kind
// unusual, severity info, between a boundary's usual time and its
// deadline; pipelines without a contract get the learned calendar
// (docs/learned.md).
//
// The Kafka and ClickHouse wiring (the `handoff detect` command) lives
// outside the analyzer; Detector's doc comment is its contract.
// docs/detect.md describes the lifecycle, the fingerprints, the finding
// JSON and the guarantees.
package detect

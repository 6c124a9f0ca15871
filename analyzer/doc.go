// Package analyzer is the room that turns delivery events into diagnoses.
// Its packages import only model: events come in through values and
// interfaces, time through an explicit as-of argument.
//
//   - replay: the pure step function and fold from one batch's events to a
//     Diagnosis.
//   - report: the human-readable and JSON forms of a diagnosis.
//   - batches: groups a stream of events by batch, replays each, and adds the
//     cross-batch continuity check.
//   - fold: one batches.Set per pipeline, diagnosed in parallel pieces and
//     handed over in batch key order; bounded by one pipeline when the input
//     comes grouped by pipeline (as ClickHouse reads it).
package analyzer

package restore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/ingest/files"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// History reads what a remedy decides on: the batch's diagnosis and the
// diagnoses of the batches of its pipeline read with it. It is the one
// read of the stored history the remediation makes.
type History interface {
	Batch(ctx context.Context, key model.BatchKey, asOf time.Time) (replay.Diagnosis, []replay.Diagnosis, error)
}

// Outcomes of a restore, as restore-signal's JSON output names them.
const (
	WouldRestore = "would_restore" // dry run, every precondition proven
	Restored     = "restored"
	InPlace      = "in_place" // the signal already holds what a restore writes, and every other precondition is proven
	Refused      = "refused"
)

// Request is one restore: which batch, where, under which contract, and
// with Apply whether to write and record it.
type Request struct {
	Key      model.BatchKey
	Dir      string
	Contract *contract.Contract
	// AsOf is the evaluation time; zero: Now.
	AsOf   time.Time
	Settle time.Duration
	Apply  bool
	Who    remedy.Who
	// Recorder records signal.restored; required with Apply.
	Recorder Recorder
	// Now is the clock of the event's time (default time.Now).
	Now func() time.Time
}

// Result is what Run found and did.
type Result struct {
	Plan    remedy.Plan
	Outcome string
	// Event is the signal.restored written or to be written (with
	// Restored, and when recording failed after the write).
	Event      *model.Event
	RecordedTo string
}

// ErrUnrecorded wraps the failure to record a restore whose signal was
// written (the proof that the record could be written held, and the
// record still failed): the event is in the Result, to be sent again.
var ErrUnrecorded = errors.New("the signal was written, but recording signal.restored failed")

// Run carries a restore out, in this order: read the history, probe the
// files, decide (remedy.Restore); then, with Apply and every
// precondition proven: prove the record can be written, write the signal
// (checking right before the rename that the data file is still the one
// proven), and record signal.restored. A refusal writes nothing.
func Run(ctx context.Context, h History, req Request) (Result, error) {
	now := req.Now
	if now == nil {
		now = time.Now
	}
	asOf := req.AsOf
	if asOf.IsZero() {
		asOf = now()
	}
	d, _, err := h.Batch(ctx, req.Key, asOf)
	if err != nil {
		return Result{}, err
	}
	facts, proof, err := Probe(ctx, req.Dir, req.Contract, req.Key, req.Settle)
	if err != nil {
		return Result{}, err
	}
	res := Result{Plan: remedy.Restore(&d, req.Contract, facts)}
	switch {
	case res.Plan.InPlace:
		res.Outcome = InPlace
		return res, nil
	case !res.Plan.Proven():
		res.Outcome = Refused
		return res, nil
	case !req.Apply:
		res.Outcome = WouldRestore
		return res, nil
	case req.Recorder == nil:
		return res, errors.New("restore: Apply needs a Recorder")
	}
	if err := req.Recorder.Ready(ctx); err != nil {
		return res, fmt.Errorf("%w: nothing written (a restore that cannot be recorded is not done)", err)
	}
	// A restore evaluated as of a time declares completion at that time:
	// the proof and the declaration are one moment of the batch's history
	// (a replay, or a demo's clock, reads them together).
	at := now()
	if !req.AsOf.IsZero() {
		at = req.AsOf
	}
	e := res.Plan.Event(&d, facts, req.Who, at)
	p := &res.Plan
	// The mark tells watchers at the receiver that this signal was
	// restored (and recorded by signal.restored), not delivered.
	o, err := files.CreateAtomic(req.Dir, p.Signal, p.Content, 0o644, e.ID, proof.Recheck)
	var changed *ChangedError
	if err != nil && !errors.As(err, &changed) {
		return res, fmt.Errorf("restore %s in %s: %w (nothing recorded)", p.Signal, req.Dir, err)
	}
	switch {
	case changed != nil:
		res.Outcome = Refused
		unprove(p, remedy.PreChecksum, changed.Error()+": nothing written")
	case o == files.Unchanged:
		res.Outcome = InPlace
	case o == files.Conflict:
		res.Outcome = Refused
		unprove(p, remedy.PreNoSignal, "a signal with other content appeared while the preconditions were checked; it was left as it is")
	case o == files.Written:
		res.Outcome, res.Event = Restored, &e
		where, err := req.Recorder.Record(ctx, e)
		if err != nil {
			return res, fmt.Errorf("%w: %w", ErrUnrecorded, err)
		}
		res.RecordedTo = where
	}
	return res, nil
}

// unprove marks the named precondition not proven, with why.
func unprove(p *remedy.Plan, name, why string) {
	for i := range p.Preconditions {
		if p.Preconditions[i].Name == name {
			p.Preconditions[i].Proven, p.Preconditions[i].Detail = false, why
			return
		}
	}
	p.Preconditions = append(p.Preconditions, remedy.Result{Name: name, Detail: why, Evidence: []string{}})
}

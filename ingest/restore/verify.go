package restore

import (
	"context"
	"time"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// VerifyRequest is one verification after a fix.
type VerifyRequest struct {
	Key      model.BatchKey
	Dir      string
	Contract *contract.Contract
	// AsOf is the evaluation time; zero: now, read at each reading.
	AsOf time.Time
	// Wait is how long to wait for the consumer to consume the batch,
	// reading the history again every Poll (zero: read once).
	Wait, Poll time.Duration
}

// Verify reads the batch's history, waiting up to Wait for a
// consume.succeeded, then probes the files and checks the batch end to
// end (remedy.Verify). It returns how long it waited.
func Verify(ctx context.Context, h History, req VerifyRequest) (remedy.Verification, time.Duration, error) {
	start := time.Now()
	d, all, err := waitConsumed(ctx, h, req)
	if err != nil {
		return remedy.Verification{}, time.Since(start), err
	}
	facts, _, err := Probe(ctx, req.Dir, req.Contract, req.Key, 0)
	if err != nil {
		return remedy.Verification{}, time.Since(start), err
	}
	return remedy.Verify(&d, all, req.Contract, facts), time.Since(start), nil
}

// waitConsumed reads the history until the batch is consumed or Wait is
// over; a failed read is tried again while there is time (the batch may
// not be stored yet).
func waitConsumed(ctx context.Context, h History, req VerifyRequest) (replay.Diagnosis, []replay.Diagnosis, error) {
	deadline := time.Now().Add(req.Wait)
	poll := req.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	for {
		asOf := req.AsOf
		if asOf.IsZero() {
			asOf = time.Now()
		}
		d, all, err := h.Batch(ctx, req.Key, asOf)
		if err == nil && remedy.Consumed(&d) || !time.Now().Before(deadline) {
			return d, all, err
		}
		t := time.NewTimer(min(poll, time.Until(deadline)+time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return d, all, ctx.Err()
		case <-t.C:
		}
	}
}

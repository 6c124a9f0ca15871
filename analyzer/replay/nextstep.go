package replay

import (
	"strconv"
	"strings"

	"github.com/handoff-dev/handoff/model"
)

// nextStep says what is safe to do next. The rule of the seed case holds
// throughout: prove the artifact first, declare completion after; never
// create a new batch to paper over a broken one.
func (v *view) nextStep(d *Diagnosis, verdict model.Hypothesis, first model.Boundary) NextStep {
	// business_date/batch_id: the end of the diagnosis' batch key.
	var key string
	if !v.key.BusinessDate.IsZero() && len(d.Batch) > len(v.key.Pipeline) {
		key = d.Batch[len(v.key.Pipeline)+1:]
	} else {
		key = v.key.BusinessDate.String() + "/" + v.key.BatchID
	}
	if verdict == model.NotIdentified && (first == model.Signaled || first == model.SignalDelivered) && len(v.proven[model.Transferred]) > 0 {
		ns := v.restoreSignal(d, key)
		if d.Status == StatusInProgress {
			// The signal may still arrive on its own: restoring it now would
			// race the exchange. Say when to act, and keep the plan.
			bs := d.Boundaries[first-1]
			ns.Action = ActionWait
			ns.Summary = v.sc.join("in progress; ", first.String(), " is not due until ", v.sc.time(bs.Due), "; if it passes: ", ns.Summary)
		}
		return ns
	}
	if d.Status == StatusBroken {
		var kinds []string
		for _, a := range d.Anomalies {
			if a.Kind.Breaks() {
				kinds = append(kinds, string(a.Kind))
			}
		}
		return NextStep{Action: ActionResolveAnomaly, Checks: []Check{},
			Summary: "resolve " + strings.Join(kinds, ", ") + " first: the evidence of batch " + key + " contradicts itself; do not declare completion or re-run a consumer until it is explained"}
	}
	wait := ""
	if d.Status == StatusInProgress && first != model.NoBoundary {
		bs := d.Boundaries[first-1]
		if !bs.Due.IsZero() {
			wait = v.sc.join("; ", first.String(), " is not due until ", v.sc.time(bs.Due))
		}
	}
	ns := NextStep{Checks: []Check{}}
	switch verdict {
	case model.Delivered:
		ns.Action, ns.Summary = ActionNone, v.sc.join("nothing to do: batch ", key, " is delivered")
		for _, a := range d.Anomalies {
			if a.Kind == ContinuityGap {
				ns.Action, ns.Summary = ActionCheckPreviousBatch, v.sc.join("batch ", key, " is delivered, but ", a.Detail, ": diagnose that batch")
			}
		}
		return ns
	case model.NotProduced:
		ns.Action = ActionInvestigateProducer
		if f := v.of(model.JobFailed); len(f) > 0 && d.Status == StatusFailed {
			ns.Summary = v.sc.join("the producer job failed (", v.errText(f[len(f)-1]), "): fix the cause, then re-run the producer for business_date ", v.date)
		} else {
			ns.Summary = v.sc.join("no job SUCCESS is recorded for business_date ", v.date, ": check whether the producer job ran")
		}
	case model.NotFinal:
		ns.Action = ActionFinalizeArtifact
		ns.Summary = "the producer reported SUCCESS but the artifact is not final: inspect the staged file and re-run the producer's finalize step; publish no completion signal until the artifact is final"
	case model.NotTransferred:
		ns.Action = ActionTransferArtifact
		name := ""
		if fin := v.proven[model.Finalized]; len(fin) > 0 {
			name = " " + strconv.Quote(v.object(fin[0]))
		}
		ns.Summary = "the final artifact" + name + " exists at the source but not at the receiver: re-run the transfer of that same file (do not regenerate it), then check size and checksum at the receiver"
	case model.NotIdentified:
		ns.Action = ActionInvestigateIdentification
		ns.Summary = "data and completion signal are at the receiver but the batch is not identified: compare the receiver's expected names with what arrived"
		if n, ok := v.keyArtifact, v.hasKeyArtifact; ok {
			ns.Summary += " (data " + strconv.Quote(n)
			if s, ok := v.keySignal, v.hasKeySignal; ok {
				ns.Summary += ", signal " + strconv.Quote(s)
			}
			ns.Summary += ")"
		}
	case model.NotConsumed:
		ns.Action = ActionInvestigateConsumer
		if f := v.of(model.ConsumeFailed); len(f) > 0 && d.Status == StatusFailed {
			ns.Summary = v.sc.join("the consumer failed (", v.errText(f[len(f)-1]), "): fix the cause, then re-run the consumer for this batch once and verify it consumed exactly once")
		} else {
			ns.Summary = "the batch was identified but no consumption is recorded: check the consumer's trigger and logs, re-run it for this batch once, and verify it consumed exactly once"
		}
	}
	if wait != "" {
		ns.Action, ns.Summary = ActionWait, v.sc.join("in progress", wait, "; if it passes: ", ns.Summary)
	}
	return ns
}

// restoreSignal plans the seed case's fix: the preconditions of
// docs/remediation.md, each checked against the evidence, and the derived name.
func (v *view) restoreSignal(d *Diagnosis, key string) NextStep {
	has := func(k AnomalyKind) []string {
		for _, a := range d.Anomalies {
			if a.Kind == k {
				return a.Evidence
			}
		}
		return nil
	}
	check := func(name string, ok bool, pass, fail string, ev []string) Check {
		if ev == nil {
			ev = []string{}
		}
		if ok {
			return Check{Name: name, State: CheckPass, Detail: pass, Evidence: ev}
		}
		return Check{Name: name, State: CheckFail, Detail: fail, Evidence: ev}
	}
	fin, tr := v.proven[model.Finalized], v.proven[model.Transferred]
	checks := []Check{
		check("artifact_final", len(fin) > 0, "final name in place at the source", "no artifact.finalized event", v.ids(fin)),
		check("artifact_readable_at_receiver", len(tr) > 0, "data file present and readable at the receiver", "no artifact.transferred event", v.ids(tr)),
	}
	hasTemplates := v.hasKeyArtifact
	if ev := has(IdentityMismatch); ev != nil {
		checks = append(checks, check("identity_matches", false, "", "a name does not derive from "+key, ev))
	} else if !hasTemplates {
		checks = append(checks, Check{Name: "identity_matches", State: CheckUnknown, Evidence: []string{},
			Detail: "the contract has no name templates: check by hand that the file's business_date and batch_id are " + key})
	} else {
		checks = append(checks, check("identity_matches", true, "object names derive from "+key, "", v.ids(fin, tr)))
	}
	// Every count stated on the way: finalized, declared by the signal,
	// transferred, identified.
	var rowEv, counts []string
	for _, t := range []model.EventType{model.ArtifactFinalized, model.SignalPublished, model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified} {
		for _, r := range v.of(t) {
			if r.hasRows() {
				rowEv = append(rowEv, v.id(r))
				counts = append(counts, string(t)+" "+strconv.FormatInt(r.rows, 10))
			}
		}
	}
	switch {
	case has(RowMismatch) != nil:
		checks = append(checks, check("rows_valid", false, "", "row counts disagree or are below the minimum", has(RowMismatch)))
	case len(rowEv) == 0:
		checks = append(checks, Check{Name: "rows_valid", State: CheckUnknown, Detail: "no row count recorded: count the rows of the file at the receiver", Evidence: []string{}})
	case len(rowEv) == 1:
		checks = append(checks, Check{Name: "rows_valid", State: CheckUnknown, Evidence: rowEv,
			Detail: "only one row count is recorded (" + counts[0] + "): count the rows of the file at the receiver and compare"})
	default:
		checks = append(checks, check("rows_valid", true, "row counts agree: "+strings.Join(counts, ", "), "", rowEv))
	}
	var sumEv []string
	for _, r := range append(append([]*record{}, fin...), tr...) {
		if v.checksum(r) != "" || r.hasBytes() {
			sumEv = append(sumEv, v.id(r))
		}
	}
	switch {
	case has(ChecksumMismatch) != nil:
		checks = append(checks, check("checksum_unchanged", false, "", "checksum or size changed across the transfer", has(ChecksumMismatch)))
	case len(sumEv) < 2:
		checks = append(checks, Check{Name: "checksum_unchanged", State: CheckUnknown, Detail: "checksum and size not recorded on both sides: compare them by hand", Evidence: []string{}})
	default:
		checks = append(checks, check("checksum_unchanged", true, "checksum and size unchanged across the transfer", "", sumEv))
	}
	sd := v.proven[model.SignalDelivered]
	checks = append(checks, check("no_signal_present", len(sd) == 0, "no completion signal recorded at the receiver", "a completion signal is already recorded at the receiver", v.ids(sd)))

	ns := NextStep{Action: ActionRestoreSignal, Checks: checks}
	name, ok := v.keySignal, v.hasKeySignal
	if ok {
		ns.Signal = name
	}
	failing := 0
	for _, c := range checks {
		if c.State != CheckPass {
			failing++
		}
	}
	target := "the completion signal"
	if ok {
		target += " " + strconv.Quote(name) + " (derived from " + key + ")"
	} else {
		target += " (no signal template in the contract: derive its name from the batch identity by the pipeline's convention)"
	}
	if failing > 0 {
		ns.Summary = "do not restore " + target + " yet: " + strconv.Itoa(failing) + " of " + strconv.Itoa(len(checks)) + " checks not proven; verify the artifact first, then restore the signal, never the other way round"
	} else {
		ns.Summary = "the artifact is proven safe: restore " + target + " idempotently (write then rename, record signal.restored), then verify end to end that the consumer consumed it exactly once"
	}
	return ns
}

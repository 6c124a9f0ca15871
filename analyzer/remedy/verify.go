package remedy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/model/manifest"
)

// Check names of Verify, in order (docs/remediation.md).
const (
	CheckArtifactReadable = "artifact_readable"
	CheckSignalIdentity   = "signal_identity"
	CheckContinuity       = "continuity"
	CheckConsumedOnce     = "consumed_once"
	CheckNoOtherBatch     = "no_other_batch_affected"
	CheckRowsMatch        = "consumed_rows_match"
	CheckDelivered        = "delivered"
)

// Checks lists the check names of Verify in order.
var Checks = [...]string{CheckArtifactReadable, CheckSignalIdentity, CheckContinuity, CheckConsumedOnce, CheckNoOtherBatch, CheckRowsMatch, CheckDelivered}

// Verification is what Verify found.
type Verification struct {
	Batch  string   `json:"batch"`
	Checks []Result `json:"checks"`
}

// Passed reports whether every check passed.
func (v *Verification) Passed() bool { return len(v.Failed()) == 0 }

// Failed names the checks that did not pass.
func (v *Verification) Failed() []string { return unproven(v.Checks) }

// Consumed reports whether d records a consume.succeeded: what verify
// --wait waits for.
func Consumed(d *replay.Diagnosis) bool {
	return len(timeline{d.Timeline}.of(model.ConsumeSucceeded)) > 0
}

// Verify checks batch d end to end after a fix (docs/remediation.md):
// the artifact is readable and is what was finalized; the signal at the
// receiver derives from the identity (and its manifest, if any, matches
// the artifact); the previous batch is delivered; the consumer consumed
// exactly once, as many rows as the verified artifact holds; and no other
// batch of the pipeline (others: their diagnoses) was touched.
func Verify(d *replay.Diagnosis, others []replay.Diagnosis, c *contract.Contract, f Facts) Verification {
	key := keyOf(d)
	v := Verification{Batch: d.Batch}
	add := func(name string, ok bool, detail string, ev ...string) {
		if ev == nil {
			ev = []string{}
		}
		v.Checks = append(v.Checks, Result{Name: name, Proven: ok, Detail: detail, Evidence: ev})
	}
	tl := timeline{d.Timeline}
	artifact, _ := c.ArtifactName(key)
	signal, _ := c.SignalName(key)
	a := f.Artifact

	// 1. The artifact at the receiver is readable and is what was made final.
	fin := tl.of(model.ArtifactFinalized)
	switch {
	case artifact == "":
		add(CheckArtifactReadable, false, "the contract has no artifact template: the data file's name cannot be derived")
	case !a.Readable:
		add(CheckArtifactReadable, false, a.describe())
	case len(fin) == 0:
		add(CheckArtifactReadable, false, a.describe()+", but no artifact.finalized is recorded to compare with")
	default:
		r := checksum(tl, a)
		if r.Proven {
			add(CheckArtifactReadable, true, a.describe()+"; "+r.Detail, r.Evidence...)
		} else {
			add(CheckArtifactReadable, false, r.Detail, r.Evidence...)
		}
	}

	// 2. The signal derives from the batch identity, is recorded, and a
	// manifest in it describes the verified artifact.
	s := f.Signal
	sd := tl.of(model.SignalTransferred, model.SignalRestored)
	switch {
	case signal == "":
		add(CheckSignalIdentity, false, "the contract has no signal template: the signal's name cannot be derived")
	case len(sd) == 0:
		add(CheckSignalIdentity, false, "no signal.transferred or signal.restored is recorded for "+d.Batch)
	case sd[len(sd)-1].Object != signal:
		last := sd[len(sd)-1]
		add(CheckSignalIdentity, false, fmt.Sprintf("%s names %q, but the signal that derives from %s is %q", last.Type, last.Object, d.Batch, signal), last.EventID)
	default:
		detail := fmt.Sprintf("%q derives from %s/%s, recorded by %s", signal, key.BusinessDate, key.BatchID, sd[len(sd)-1].Type)
		ok := true
		if s.Exists && (s.Link != "" || !s.Regular) {
			detail += "; but " + s.describe()
			ok = false
		} else if s.Exists {
			detail += "; the file is at the receiver"
			if c.SignalContent == contract.SignalManifest {
				why, good := checkManifest(s.Content, key, artifact, a)
				ok = good
				detail += "; " + why
			}
		} else {
			// The consumer may remove the signal once it consumed: the
			// recorded event is the evidence then.
			detail += "; the file is no longer at the receiver (a consumer may remove it)"
		}
		add(CheckSignalIdentity, ok, detail, ids(sd)...)
	}

	// 3. Continuity with the previous batch of the schedule.
	r := previous(d)
	add(CheckContinuity, r.Proven, r.Detail)

	// 4. Consumed exactly once.
	cs := tl.of(model.ConsumeSucceeded)
	switch len(cs) {
	case 0:
		add(CheckConsumedOnce, false, "no consume.succeeded recorded: the consumer has not consumed "+d.Batch+" (yet)")
	case 1:
		add(CheckConsumedOnce, true, "one consume.succeeded at "+model.HumanTime(cs[0].Time, c.Location), cs[0].EventID)
	default:
		add(CheckConsumedOnce, false, strconv.Itoa(len(cs))+" distinct consume.succeeded events: consumed more than once", ids(cs)...)
	}

	// 5. No other batch affected.
	v.Checks = append(v.Checks, otherBatches(d, key, others, artifact, signal))

	// 6. Consumed rows = verified artifact rows.
	switch {
	case len(cs) == 0:
		add(CheckRowsMatch, false, "nothing consumed to compare")
	case !a.Readable:
		add(CheckRowsMatch, false, "the artifact could not be counted to compare with")
	default:
		last := cs[len(cs)-1]
		if !last.HasRows || last.Rows != a.Rows {
			add(CheckRowsMatch, false, fmt.Sprintf("consume.succeeded recorded %s, the verified artifact has %d", rowsText(last), a.Rows), last.EventID)
		} else {
			add(CheckRowsMatch, true, fmt.Sprintf("consumed %d rows = %d rows counted in %q", last.Rows, a.Rows, a.Name), last.EventID)
		}
	}

	// 7. The replay agrees: delivered, nothing contradicting.
	add(CheckDelivered, d.Status == replay.StatusDelivered, fmt.Sprintf("status %s, verdict %s%s", d.Status, d.Verdict, anomalyText(d)))
	return v
}

func rowsText(e replay.Entry) string {
	if !e.HasRows {
		return "no row count"
	}
	return strconv.FormatInt(e.Rows, 10) + " rows"
}

func anomalyText(d *replay.Diagnosis) string {
	var kinds []string
	for _, a := range d.Anomalies {
		kinds = append(kinds, string(a.Kind))
	}
	if len(kinds) == 0 {
		return ", no anomalies"
	}
	return ", anomalies: " + strings.Join(kinds, ", ")
}

// checkManifest compares a manifest signal with the batch and the verified
// artifact.
func checkManifest(content []byte, key model.BatchKey, artifact string, a File) (string, bool) {
	m, err := manifest.Parse(content)
	if err != nil {
		return err.Error(), false
	}
	if m.Key != key {
		return "the manifest names batch " + m.Key.String(), false
	}
	mf, ok := m.File(artifact)
	if !ok {
		return "the manifest does not list " + strconv.Quote(artifact), false
	}
	if a.Readable && (mf.Rows != a.Rows || !strings.EqualFold(mf.Checksum, a.Checksum) || mf.Bytes != a.Size) {
		return fmt.Sprintf("the manifest says %d rows, %d bytes, %s; the artifact has %d rows, %d bytes, %s", mf.Rows, mf.Bytes, mf.Checksum, a.Rows, a.Size, a.Checksum), false
	}
	return "its manifest matches the artifact", true
}

// otherBatches checks that the fix touched no other batch: no other batch
// of the same business date appeared (a "new batch"), no other batch's
// events name this batch's files, and no other batch consumed more than
// once since this batch's signal was restored or delivered.
func otherBatches(d *replay.Diagnosis, key model.BatchKey, others []replay.Diagnosis, artifact, signal string) Result {
	fail := func(detail string, ev []string) Result {
		if ev == nil {
			ev = []string{}
		}
		return Result{Name: CheckNoOtherBatch, Detail: detail, Evidence: ev}
	}
	var since time.Time
	for _, e := range d.Timeline {
		if e.Type == model.SignalRestored || e.Type == model.SignalTransferred {
			if since.IsZero() || e.Time.Before(since) {
				since = e.Time
			}
		}
	}
	n := 0
	for i := range others {
		o := &others[i]
		if o.Batch == d.Batch || o.Pipeline != key.Pipeline {
			continue
		}
		n++
		if o.BusinessDate == key.BusinessDate.String() {
			return fail("another batch of business date "+o.BusinessDate+" exists: "+o.Batch+" (a fix must never create a new batch)", firstIDs(o))
		}
		for _, e := range o.Timeline {
			if e.Object != "" && (e.Object == artifact || e.Object == signal) {
				return fail(fmt.Sprintf("batch %s's %s names %q, a file of %s", o.Batch, e.Type, e.Object, d.Batch), []string{e.EventID})
			}
		}
		var cs []string
		recent := false
		for _, e := range o.Timeline {
			if e.Type == model.ConsumeSucceeded {
				cs = append(cs, e.EventID)
				recent = recent || since.IsZero() || !e.Time.Before(since)
			}
		}
		if len(cs) > 1 && recent {
			return fail("batch "+o.Batch+" was consumed "+strconv.Itoa(len(cs))+" times, once since this batch's signal", cs)
		}
	}
	return Result{Name: CheckNoOtherBatch, Proven: true, Evidence: []string{}, Detail: fmt.Sprintf("%d other batches of %s read: none shares business date %s, none names this batch's files, none consumed twice since the signal", n, key.Pipeline, key.BusinessDate)}
}

func firstIDs(d *replay.Diagnosis) []string {
	if len(d.Timeline) == 0 {
		return nil
	}
	return []string{d.Timeline[0].EventID}
}

package remedy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/model/manifest"
)

// Precondition names, in the order Restore checks them: the artifact
// first, the signal last (docs/remediation.md says what each proves).
const (
	PreDiagnosis         = "diagnosis_calls_for_restore"
	PreArtifactFinal     = "artifact_final"
	PreArtifactReceiver  = "artifact_at_receiver"
	PreIdentity          = "identity_matches"
	PreRows              = "rows_valid"
	PreChecksum          = "checksum_unchanged"
	PrePreviousDelivered = "previous_delivered"
	PreNoSignal          = "no_signal_present"
)

// Preconditions lists the precondition names in order.
var Preconditions = [...]string{PreDiagnosis, PreArtifactFinal, PreArtifactReceiver, PreIdentity, PreRows, PreChecksum, PrePreviousDelivered, PreNoSignal}

// Result is one precondition or check, proven or not, with its evidence.
type Result struct {
	Name   string `json:"name"`
	Proven bool   `json:"proven"`
	// Detail says what was compared and what was found.
	Detail string `json:"detail"`
	// Evidence lists the ids of the events behind the result.
	Evidence []string `json:"evidence"`
}

// Plan is what Restore decided.
type Plan struct {
	Batch    string `json:"batch"`
	Artifact string `json:"artifact"`
	// Signal is the derived name of the signal to restore ("" when the
	// contract has no signal template: then nothing can be restored).
	Signal string `json:"signal"`
	// Content is what the signal file must hold (empty, or a manifest).
	Content       []byte   `json:"-"`
	Preconditions []Result `json:"preconditions"`
	// Present: a regular file under the signal's name at the receiver
	// already holds exactly Content.
	Present bool `json:"present"`
	// InPlace: Present, and every other precondition is proven: the
	// signal there is the one a restore would write, and the facts
	// support what it declares. A restore has nothing to do. A signal
	// that is Present without that proof is a refusal: it declares a
	// delivery the facts do not support.
	InPlace bool `json:"in_place"`
}

// Proven reports whether every precondition is proven.
func (p *Plan) Proven() bool { return len(p.Unproven()) == 0 }

// Unproven names the preconditions not proven.
func (p *Plan) Unproven() []string { return unproven(p.Preconditions) }

// unproven names the results not proven, in order.
func unproven(rs []Result) []string {
	var out []string
	for _, r := range rs {
		if !r.Proven {
			out = append(out, r.Name)
		}
	}
	return out
}

// Restore checks every precondition of restoring batch d's completion
// signal (docs/remediation.md) against d, which replays the recorded
// events, and against the files at the receiver. The signal's name derives
// from the batch identity under c; its content is what c asks for.
func Restore(d *replay.Diagnosis, c *contract.Contract, f Facts) Plan {
	key := keyOf(d)
	p := Plan{Batch: d.Batch, Preconditions: make([]Result, 0, len(Preconditions))}
	p.Artifact, _ = c.ArtifactName(key)
	p.Signal, _ = c.SignalName(key)
	add := func(name string, ok bool, detail string, ev ...[]string) {
		all := []string{}
		for _, e := range ev {
			all = append(all, e...)
		}
		p.Preconditions = append(p.Preconditions, Result{Name: name, Proven: ok, Detail: detail, Evidence: all})
	}
	tl := timeline{d.Timeline}
	fin := tl.of(model.ArtifactFinalized)
	a, s := f.Artifact, f.Signal
	// Content before the checks: a signal holding exactly what a restore
	// would write is the restore already done, if the rest is proven.
	if p.Signal != "" {
		p.Content = signalContent(c, key, p.Artifact, a, fin)
	}
	p.Present = p.Signal != "" && s.Exists && s.Regular && s.Link == "" && s.Content != nil && bytes.Equal(s.Content, p.Content)

	// The diagnosis must say the delivery stopped at the signal, with the
	// data proven at the receiver, and the signal overdue: restoring a
	// signal that may still arrive races the exchange. With the signal
	// already there, the replay has moved past it: then only the data
	// recorded at the receiver is asked for, and the artifact's
	// preconditions decide.
	transferred := len(tl.ids(model.ArtifactTransferred)) > 0
	state := fmt.Sprintf("status %s, verdict %s, first missing %q, next step %s", d.Status, d.Verdict, d.FirstMissing, d.NextStep.Action)
	if p.Present {
		if transferred {
			add(PreDiagnosis, true, "the signal is already at the receiver; the replay says "+state)
		} else {
			add(PreDiagnosis, false, "the signal is already at the receiver, but no artifact.transferred is recorded: the replay says "+state)
		}
	} else {
		restore := d.Verdict == model.NotIdentified && (d.FirstMissing == model.Signaled.String() || d.FirstMissing == model.SignalDelivered.String()) &&
			d.Status != replay.StatusInProgress && transferred
		add(PreDiagnosis, restore, state)
	}

	switch {
	case len(fin) == 0:
		add(PreArtifactFinal, false, "no artifact.finalized recorded: the producer never declared the file final")
	default:
		add(PreArtifactFinal, true, fmt.Sprintf("artifact.finalized %q recorded at %s", fin[len(fin)-1].Object, model.HumanTime(fin[len(fin)-1].Time, c.Location)), ids(fin))
	}

	tr := tl.ids(model.ArtifactTransferred)
	switch {
	case p.Artifact == "":
		add(PreArtifactReceiver, false, "the contract has no artifact template: the data file's name cannot be derived from "+d.Batch)
	case contract.CheckFileName(p.Artifact) != nil:
		add(PreArtifactReceiver, false, fmt.Sprintf("the data file's name derived from %s %v: no receiver can hold it; fix the contract's artifact template", d.Batch, contract.CheckFileName(p.Artifact)))
	case !a.Exists && len(a.Temps) > 0:
		add(PreArtifactReceiver, false, fmt.Sprintf("only a temporary copy is at the receiver (%s): the transfer has not finished", strings.Join(a.Temps, ", ")))
	case !a.Exists || !a.Regular || !a.Readable:
		add(PreArtifactReceiver, false, a.describe())
	case len(a.Temps) > 0:
		add(PreArtifactReceiver, false, fmt.Sprintf("%s, but a temporary copy is beside it (%s): a copy may be in progress", a.describe(), strings.Join(a.Temps, ", ")))
	case a.Settle > 0 && !a.Stable:
		add(PreArtifactReceiver, false, fmt.Sprintf("%q is still growing: size or modification time changed within %s", a.Name, a.Settle))
	case len(tr) == 0:
		add(PreArtifactReceiver, false, a.describe()+", but no artifact.transferred is recorded: the exchange never declared it delivered")
	default:
		add(PreArtifactReceiver, true, a.describe()+settleText(a), tr)
	}

	p.Preconditions = append(p.Preconditions, identity(d, c, key, p.Artifact, p.Signal, tl, a))
	p.Preconditions = append(p.Preconditions, rows(c, tl, a))
	p.Preconditions = append(p.Preconditions, checksum(tl, a))
	p.Preconditions = append(p.Preconditions, previous(d))

	sd := tl.ids(model.SignalTransferred, model.SignalRestored)
	switch {
	case p.Signal == "":
		add(PreNoSignal, false, "the contract has no signal template: the signal's name cannot be derived from "+d.Batch)
	case contract.CheckFileName(p.Signal) != nil:
		add(PreNoSignal, false, fmt.Sprintf("the signal's name derived from %s %v: no receiver can hold it; fix the contract's signal template", d.Batch, contract.CheckFileName(p.Signal)))
	case s.Link != "":
		add(PreNoSignal, false, "the signal's name is taken: "+s.describe()+"; nothing is written through or over a link: find out who made it and remove it", sd)
	case s.Exists && !s.Regular:
		add(PreNoSignal, false, "the signal's name is taken: "+s.describe(), sd)
	case p.Present:
		what := "a signal is already at the receiver: " + strconv.Quote(s.Name) + ", a regular file holding exactly what a restore would write"
		if len(sd) == 0 {
			what += "; no signal.transferred or signal.restored is recorded for it (verify needs one)"
		}
		add(PreNoSignal, false, what, sd)
	case s.Exists:
		add(PreNoSignal, false, "a signal is already at the receiver: "+strconv.Quote(s.Name)+", with other content than a restore would write: find out who wrote it before anything else", sd)
	case len(s.Temps) > 0:
		add(PreNoSignal, false, "a signal is being written at the receiver: "+strings.Join(s.Temps, ", "))
	case len(sd) > 0:
		add(PreNoSignal, false, "a signal delivery is already recorded for this batch (the file is gone: consumed and removed?)", sd)
	default:
		add(PreNoSignal, true, strconv.Quote(p.Signal)+" is not at the receiver and no signal delivery is recorded")
	}
	if p.Present {
		p.InPlace = true
		for _, r := range p.Preconditions {
			p.InPlace = p.InPlace && (r.Proven || r.Name == PreNoSignal)
		}
	}
	return p
}

// Unjustified names the preconditions other than no_signal_present that
// are not proven: what a signal already Present lacks.
func (p *Plan) Unjustified() []string {
	var out []string
	for _, n := range p.Unproven() {
		if n != PreNoSignal {
			out = append(out, n)
		}
	}
	return out
}

func settleText(f File) string {
	if f.Settle <= 0 {
		return ""
	}
	return "; unchanged over " + f.Settle.String()
}

// identity proves the names derive from the batch: the batch id from the
// date, every recorded artifact and signal name from the identity, and the
// file at the receiver under the derived name.
func identity(d *replay.Diagnosis, c *contract.Contract, key model.BatchKey, artifact, signal string, tl timeline, a File) Result {
	r := Result{Name: PreIdentity, Evidence: []string{}}
	if artifact == "" || signal == "" {
		r.Detail = "the contract has no artifact and signal templates: names cannot be derived from " + d.Batch + ", so they cannot be checked"
		return r
	}
	if want, ok := c.ExpectedBatchID(key.Pipeline, key.BusinessDate); ok && want != key.BatchID {
		r.Detail = fmt.Sprintf("batch_id %q does not derive from business_date %s (want %q)", key.BatchID, key.BusinessDate, want)
		return r
	}
	for _, an := range d.Anomalies {
		if an.Kind == replay.IdentityMismatch {
			r.Detail, r.Evidence = "identity_mismatch: "+an.Detail, an.Evidence
			return r
		}
	}
	for _, e := range d.Timeline {
		want := ""
		switch {
		case e.Type.IsArtifact() && e.Type != model.ArtifactStaged:
			want = artifact
		case e.Type.IsSignal():
			want = signal
		default:
			continue
		}
		if e.Object != want {
			r.Detail, r.Evidence = fmt.Sprintf("%s names %q, but the name that derives from %s is %q", e.Type, e.Object, d.Batch, want), []string{e.EventID}
			return r
		}
		r.Evidence = append(r.Evidence, e.EventID)
	}
	if bk, kind, ok := c.Identify(a.Name); !ok || bk != key || kind != contract.NameArtifact {
		r.Detail = fmt.Sprintf("the file %q does not read back to %s", a.Name, d.Batch)
		return r
	}
	r.Proven = true
	r.Detail = fmt.Sprintf("batch_id, %q and %q derive from %s/%s; every recorded name matches", artifact, signal, key.BusinessDate, key.BatchID)
	return r
}

// rows proves the file's counted rows equal every count recorded on the
// way, and meet the contract's minimum.
func rows(c *contract.Contract, tl timeline, a File) Result {
	r := Result{Name: PreRows, Evidence: []string{}}
	if !a.Readable {
		r.Detail = "the file at the receiver could not be counted"
		return r
	}
	var counts []string
	finRows := false
	for _, e := range tl.entries {
		switch e.Type {
		case model.ArtifactFinalized, model.ArtifactTransferred, model.SignalPublished, model.SignalTransferred, model.BatchIdentified:
		default:
			continue
		}
		if !e.HasRows {
			continue
		}
		finRows = finRows || e.Type == model.ArtifactFinalized
		r.Evidence = append(r.Evidence, e.EventID)
		if c.Rows.Equal && e.Rows != a.Rows {
			r.Detail = fmt.Sprintf("the file at the receiver has %d rows, but %s recorded %d", a.Rows, e.Type, e.Rows)
			r.Evidence = []string{e.EventID}
			return r
		}
		counts = append(counts, fmt.Sprintf("%s %d", e.Type, e.Rows))
	}
	if c.Rows.HasMin && a.Rows < c.Rows.Min {
		r.Detail = fmt.Sprintf("the file at the receiver has %d rows, below the contract's minimum of %d", a.Rows, c.Rows.Min)
		return r
	}
	if !finRows {
		r.Detail = fmt.Sprintf("the file at the receiver has %d rows, but no artifact.finalized row count is recorded to compare with", a.Rows)
		return r
	}
	r.Proven = true
	r.Detail = fmt.Sprintf("counted %d rows in %q; recorded: %s", a.Rows, a.Name, strings.Join(counts, ", "))
	if !c.Rows.Equal {
		r.Detail += " (rows.equal is off: counts not compared)"
	}
	return r
}

// checksum proves the recomputed checksum and the size equal every
// checksum and size recorded for the artifact.
func checksum(tl timeline, a File) Result {
	r := Result{Name: PreChecksum, Evidence: []string{}}
	if !a.Readable {
		r.Detail = "the file at the receiver could not be read to recompute its checksum"
		return r
	}
	var compared []string
	for _, e := range tl.of(model.ArtifactFinalized, model.ArtifactTransferred) {
		if e.Checksum != "" {
			if !strings.EqualFold(e.Checksum, a.Checksum) {
				r.Detail, r.Evidence = fmt.Sprintf("recomputed %s, but %s recorded %s", a.Checksum, e.Type, e.Checksum), []string{e.EventID}
				return r
			}
			compared = append(compared, string(e.Type)+" checksum")
			r.Evidence = append(r.Evidence, e.EventID)
		}
		if e.HasBytes {
			if e.Bytes != a.Size {
				r.Detail, r.Evidence = fmt.Sprintf("the file is %d bytes, but %s recorded %d", a.Size, e.Type, e.Bytes), []string{e.EventID}
				return r
			}
			compared = append(compared, string(e.Type)+" size")
			r.Evidence = append(r.Evidence, e.EventID)
		}
	}
	if len(compared) == 0 {
		r.Detail = "recomputed " + a.Checksum + ", but no checksum or size is recorded for the artifact to compare with"
		return r
	}
	r.Proven = true
	r.Evidence = dedupe(r.Evidence)
	r.Detail = fmt.Sprintf("recomputed %s, %d bytes: equal to %s", a.Checksum, a.Size, strings.Join(dedupe(compared), ", "))
	return r
}

// previous proves batch continuity: the batch before this one is
// delivered. Without a schedule there is no previous batch to check.
func previous(d *replay.Diagnosis) Result {
	r := Result{Name: PrePreviousDelivered, Evidence: []string{}}
	switch pb := d.Previous; {
	case pb == nil:
		r.Proven = true
		r.Detail = "continuity not checked: the contract has no schedule, or no earlier batch of the pipeline is recorded"
	case !pb.Seen:
		r.Detail = "previous batch " + pb.Batch + " has no events at all: restore that one's delivery first"
	case !pb.Delivered:
		r.Detail = "previous batch " + pb.Batch + " is not delivered (verdict " + pb.Verdict.String() + "): restoring this one would let the consumer skip it"
	default:
		r.Proven = true
		r.Detail = "previous batch " + pb.Batch + " is delivered"
	}
	return r
}

// signalContent is what the restored signal holds: nothing, or the
// manifest of the verified artifact.
func signalContent(c *contract.Contract, key model.BatchKey, artifact string, a File, fin []replay.Entry) []byte {
	if c.SignalContent != contract.SignalManifest {
		return []byte{}
	}
	file := manifest.File{Name: artifact, Rows: a.Rows, Bytes: a.Size, Checksum: a.Checksum}
	if !a.Readable && len(fin) > 0 {
		last := fin[len(fin)-1]
		file = manifest.File{Name: artifact, Rows: last.Rows, Bytes: last.Bytes, Checksum: last.Checksum}
	}
	return manifest.New(key, file).Encode()
}

// Who says who restored a signal and why, for the signal.restored event.
type Who struct {
	User, Host, Reason string
	// Component names the tool, "handoff restore-signal" by default.
	Component string
}

// Event returns the signal.restored event that records the restore of
// plan at time at. Its event_id derives from the batch, the signal and its
// content, so recording the same restore twice is one event.
func (p *Plan) Event(d *replay.Diagnosis, f Facts, who Who, at time.Time) model.Event {
	key := keyOf(d)
	comp := who.Component
	if comp == "" {
		comp = "handoff restore-signal"
	}
	e := model.Event{
		Spec: model.SpecV1, ID: EventID(key, p.Signal, p.Content), Type: model.SignalRestored,
		Time: at.UTC().Truncate(time.Millisecond), Pipeline: key.Pipeline, BusinessDate: key.BusinessDate,
		BatchID: key.BatchID, System: model.Operator, Component: comp, Object: p.Signal,
		Attrs: map[string]string{"restored_by": who.User, "host": who.Host, "reason": who.Reason, "location": f.Dir,
			"artifact": p.Artifact},
	}
	if a := f.Artifact; a.Readable {
		e.Rows, e.HasRows = a.Rows, true
		e.Attrs["artifact_checksum"] = a.Checksum
		e.Attrs["artifact_bytes"] = strconv.FormatInt(a.Size, 10)
	}
	return e
}

// EventID derives the id of the signal.restored event from the batch, the
// signal and its content: the same restore recorded twice is one event.
func EventID(key model.BatchKey, object string, content []byte) string {
	sum := sha256.Sum256(content)
	return model.DerivedEventID(key.String(), string(model.SignalRestored), object, hex.EncodeToString(sum[:]))
}

// timeline reads a diagnosis' events by type.
type timeline struct{ entries []replay.Entry }

func (t timeline) of(types ...model.EventType) []replay.Entry {
	var out []replay.Entry
	for _, e := range t.entries {
		for _, ty := range types {
			if e.Type == ty {
				out = append(out, e)
			}
		}
	}
	return out
}

func (t timeline) ids(types ...model.EventType) []string { return ids(t.of(types...)) }

func ids(es []replay.Entry) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.EventID)
	}
	return out
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		found := false
		for _, y := range out {
			found = found || x == y
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

func keyOf(d *replay.Diagnosis) model.BatchKey {
	k, _ := model.ParseBatchKey(d.Batch)
	return k
}

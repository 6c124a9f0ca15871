package contract

import (
	"time"

	"github.com/handoff-dev/handoff/model"
)

// NameKind says which of a contract's templates a file name matched.
type NameKind int8

// Name kinds.
const (
	NameNone NameKind = iota
	NameArtifact
	NameSignal
)

// String returns "artifact", "signal" or "none".
func (k NameKind) String() string {
	switch k {
	case NameArtifact:
		return "artifact"
	case NameSignal:
		return "signal"
	}
	return "none"
}

// Identify reads a file name back into the batch it belongs to: the
// inverse of ArtifactName and SignalName. Watchers see names, not
// identities; a name counts only when rendering the batch it reads back
// to gives exactly the same name, so a near miss (a stray suffix, a
// date that does not exist) matches nothing rather than a wrong batch.
// {batch_id} in a name is read through the batch_id template; without
// one, names that use {batch_id} cannot be read back.
func (c *Contract) Identify(name string) (model.BatchKey, NameKind, bool) {
	for _, tk := range [...]struct {
		t Template
		k NameKind
	}{{c.Artifact, NameArtifact}, {c.Signal, NameSignal}} {
		if tk.t.IsZero() {
			continue
		}
		exp, ok := tk.t.expand(c.BatchID)
		if !ok {
			continue
		}
		st, ok := exp.match(name, c.Pipeline)
		if !ok || st.year < 0 || st.month < 0 || st.day < 0 {
			continue
		}
		d := model.Date{Year: st.year, Month: time.Month(st.month), Day: st.day}
		if _, err := model.ParseDate(d.String()); err != nil {
			continue
		}
		hh, mi := max(st.hour, 0), max(st.minute, 0)
		k := model.BatchKey{Pipeline: c.Pipeline, BusinessDate: d}
		if c.BatchID.IsZero() {
			k.BatchID = d.Compact()
		} else {
			k.BatchID = c.BatchID.renderAt(k, hh, mi)
		}
		if back, ok := c.render(tk.t, k); ok && back == name {
			return k, tk.k, true
		}
	}
	return model.BatchKey{}, NameNone, false
}

// expand replaces {batch_id} in t by the parts of the batch id template,
// so that a name can be read back into a date. It fails when t uses
// {batch_id} and there is no batch id template to expand it with.
func (t Template) expand(batchID Template) (Template, bool) {
	if !t.Uses("batch_id") {
		return t, true
	}
	if batchID.IsZero() {
		return Template{}, false
	}
	out := Template{text: t.text, timed: t.timed || batchID.timed}
	for _, p := range t.parts {
		if p.ph == phBatchID {
			out.parts = append(out.parts, batchID.parts...)
			continue
		}
		out.parts = append(out.parts, p)
	}
	return out, true
}

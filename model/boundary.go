package model

import "fmt"

// Boundary is one step of the delivery chain, proven by one kind of event.
// The ladder is ordered: Produced < Finalized < ... < Consumed. The zero value
// means "no boundary".
type Boundary int8

// The boundary ladder (docs/diagnosis.md), in order.
const (
	NoBoundary      Boundary = iota
	Produced                 // job.succeeded
	Finalized                // artifact.finalized: final name in place, temp gone
	Signaled                 // signal.published at the source
	Transferred              // artifact.transferred: final file readable at the receiver
	SignalDelivered          // signal.transferred or signal.restored
	Identified               // batch.identified: receiver matched data and signal
	Consumed                 // consume.succeeded
)

// Ladder lists every boundary in order.
var Ladder = [...]Boundary{Produced, Finalized, Signaled, Transferred, SignalDelivered, Identified, Consumed}

var boundaryNames = [...]string{"", "produced", "finalized", "signaled", "transferred", "signal_delivered", "identified", "consumed"}

// String returns the boundary's name as used in diagnoses and contracts.
func (b Boundary) String() string {
	if b < 0 || int(b) >= len(boundaryNames) {
		return fmt.Sprintf("boundary(%d)", int8(b))
	}
	return boundaryNames[b]
}

// Valid reports whether b is one of the seven boundaries.
func (b Boundary) Valid() bool { return b >= Produced && b <= Consumed }

// OnDataPath reports whether b is evidence that data moved (1, 2, 4, 6, 7).
// Signals (3, 5) are declarations, not data evidence.
func (b Boundary) OnDataPath() bool { return b.Valid() && b != Signaled && b != SignalDelivered }

// ParseBoundary returns the boundary with the given name.
func ParseBoundary(s string) (Boundary, error) {
	for i := Produced; i <= Consumed; i++ {
		if boundaryNames[i] == s {
			return i, nil
		}
	}
	return NoBoundary, fmt.Errorf("unknown boundary %q (want one of produced, finalized, signaled, transferred, signal_delivered, identified, consumed)", s)
}

// BoundarySet is a set of boundaries, as a bit mask.
type BoundarySet uint8

// AllBoundaries is the default contract's set: every boundary of the ladder.
const AllBoundaries BoundarySet = 0xFE

// Has reports whether b is in the set.
func (s BoundarySet) Has(b Boundary) bool { return b.Valid() && s&(1<<uint(b)) != 0 }

// With returns the set plus b.
func (s BoundarySet) With(b Boundary) BoundarySet { return s | 1<<uint(b) }

// Without returns the set minus b.
func (s BoundarySet) Without(b Boundary) BoundarySet { return s &^ (1 << uint(b)) }

// List returns the set's boundaries in ladder order.
func (s BoundarySet) List() []Boundary {
	var out []Boundary
	for _, b := range Ladder {
		if s.Has(b) {
			out = append(out, b)
		}
	}
	return out
}

// Hypothesis names where a delivery stopped: one of the five stretches of the
// ladder in docs/seed-case.md, or Delivered.
type Hypothesis int8

// The five hypotheses, in order, and the verdict when all are excluded.
const (
	NotProduced Hypothesis = iota
	NotFinal
	NotTransferred
	NotIdentified
	NotConsumed
	Delivered
)

// Hypotheses lists the five hypotheses in order (Delivered is not one).
var Hypotheses = [...]Hypothesis{NotProduced, NotFinal, NotTransferred, NotIdentified, NotConsumed}

var hypothesisNames = [...]string{"not_produced", "not_final", "not_transferred", "not_identified", "not_consumed", "delivered"}

// String returns the hypothesis name as used in diagnoses.
func (h Hypothesis) String() string {
	if h < 0 || int(h) >= len(hypothesisNames) {
		return fmt.Sprintf("hypothesis(%d)", int8(h))
	}
	return hypothesisNames[h]
}

// ParseHypothesis returns the hypothesis (or Delivered) with the given name.
func ParseHypothesis(s string) (Hypothesis, error) {
	for i, n := range hypothesisNames {
		if n == s {
			return Hypothesis(i), nil
		}
	}
	return 0, fmt.Errorf("unknown verdict %q", s)
}

// MarshalText encodes h by its name, so that a verdict reads the same in
// JSON as in docs/diagnosis.md ("not_identified", never 3).
func (h Hypothesis) MarshalText() ([]byte, error) {
	if h < 0 || int(h) >= len(hypothesisNames) {
		return nil, fmt.Errorf("hypothesis %d: no such hypothesis (want 0..%d)", int8(h), len(hypothesisNames)-1)
	}
	return []byte(hypothesisNames[h]), nil
}

// UnmarshalText decodes a hypothesis name (or "delivered"), as
// ParseHypothesis does.
func (h *Hypothesis) UnmarshalText(b []byte) error {
	v, err := ParseHypothesis(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// Boundary returns the data boundary whose proof excludes h: the boundary the
// hypothesis says was not reached.
func (h Hypothesis) Boundary() Boundary {
	switch h {
	case NotProduced:
		return Produced
	case NotFinal:
		return Finalized
	case NotTransferred:
		return Transferred
	case NotIdentified:
		return Identified
	case NotConsumed:
		return Consumed
	}
	return NoBoundary
}

// ExcludedBy reports whether an event proving boundary b excludes h: b is h's
// data boundary or a later one on the data path.
func (h Hypothesis) ExcludedBy(b Boundary) bool {
	hb := h.Boundary()
	return hb != NoBoundary && b.OnDataPath() && b >= hb
}

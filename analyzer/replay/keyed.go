package replay

import "github.com/handoff-dev/handoff/model"

// NewState returns an empty State for batch k. Evaluate then diagnoses a
// batch that has no events at all: one the schedule expects and that never
// showed up (verdict not_produced, due by its first deadline). The zero
// State cannot say which batch it is until its first Step. The state keeps
// its own copy of k's strings.
func NewState(k model.BatchKey) State { return State{key: cloneKey(k)} }

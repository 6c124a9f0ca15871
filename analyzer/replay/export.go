package replay

import (
	"time"

	"github.com/handoff-dev/handoff/model"
)

// Each calls yield with every distinct event folded into s, in the order
// they were folded, as a model.Event with the fields the replay reads
// (no attributes). The event and its strings are valid only during the
// call: the strings share the state's arena and the event is reused.
// Stepping the events yielded into a new State of the same key gives a
// state that evaluates the same: what a caller needs to keep a quiet
// batch in a form of its own and fold it back in when it is read again.
func (s *State) Each(yield func(e *model.Event)) {
	var e model.Event
	for i := range s.records {
		r := &s.records[i]
		e = model.Event{
			ID: s.str(r.strs[sID]), Type: r.typ(), Time: time.UnixMilli(r.ms).UTC(),
			Pipeline: s.key.Pipeline, BusinessDate: s.key.BusinessDate, BatchID: s.key.BatchID,
			System: sideOrder[r.side], Component: s.str(r.strs[sComponent]), Object: s.str(r.strs[sObject]),
			Checksum: s.str(r.strs[sChecksum]), Error: s.str(r.strs[sErr]),
			Rows: r.rows, Bytes: r.bytes, Attempt: r.attempt,
			HasRows: r.hasRows(), HasBytes: r.hasBytes(), HasAttempt: r.hasAttempt(),
		}
		yield(&e)
	}
}

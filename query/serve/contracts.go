package serve

import (
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
)

// contractMemo is the contracts of one page's Set, each pipeline's looked
// up once: For of a pipeline without a contract file makes a new default
// contract at each call, and the fold and the diagnoses of an
// all-pipelines day asked for one several times a batch (4% of the CPU of
// the day of 10,000 pipelines). The contracts are the same values
// s.contracts gives (shared, as contract.Set's own are, and never
// changed by their users).
//
// It is filled while the Set is read, by the one goroutine that folds it,
// and only read once frozen (freeze, before the Set is returned): the
// diagnoses then ask from two goroutines at once, and a pipeline not met
// before (one whose expected batches are all absent) is looked up in
// s.contracts, not kept.
type contractMemo struct {
	cs     history.Contracts
	m      map[string]*contract.Contract
	frozen bool
}

func newContractMemo(cs history.Contracts) *contractMemo {
	return &contractMemo{cs: cs, m: make(map[string]*contract.Contract)}
}

// For is cs.For(pipeline).
func (c *contractMemo) For(pipeline string) *contract.Contract {
	if ct, ok := c.m[pipeline]; ok {
		return ct
	}
	ct := c.cs.For(pipeline)
	if !c.frozen {
		c.m[pipeline] = ct
	}
	return ct
}

// freeze ends the filling: from then on For only reads the memo.
func (c *contractMemo) freeze() { c.frozen = true }

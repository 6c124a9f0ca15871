package detect

import (
	"maps"

	"github.com/handoff-dev/handoff/model/contract"
)

// routing returns the contract's severity, owner and labels (a copy of
// the labels: the contract is shared, the finding is the caller's).
func routing(c *contract.Contract) (severity, owner string, labels map[string]string) {
	if len(c.Labels) > 0 {
		labels = maps.Clone(c.Labels)
	}
	return c.Severity, c.Owner, labels
}

package detect

import "github.com/handoff-dev/handoff/model/contract"

// routing returns the contract's severity, owner and labels (a copy: the
// contract is shared).
func routing(c *contract.Contract) (severity, owner string, labels map[string]string) {
	return "", "", nil // TODO(schedule merge): c.Severity, c.Owner, maps.Clone(c.Labels)
}

package learn

import (
	"fmt"
	"strings"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Diff returns how the suggestion differs from an existing contract, a
// line per field ("schedule: contract daily, suggested weekdays"), empty
// when they agree. A field the suggestion did not learn is not compared:
// the history says nothing against the contract there.
func Diff(existing *contract.Contract, s Suggestion) ([]string, error) {
	c, err := contract.Parse(s.Pipeline+".yaml", s.YAML)
	if err != nil {
		return nil, fmt.Errorf("suggestion for %s does not load: %w", s.Pipeline, err)
	}
	var out []string
	differ := func(field, have, want string) {
		if have != want {
			out = append(out, fmt.Sprintf("%s: contract %s, suggested %s", field, orNone(have), orNone(want)))
		}
	}
	if s.Schedule != "" {
		differ("schedule", string(existing.Schedule), string(c.Schedule))
		differ("holidays", dates(existing.Holidays, s.First, s.Last), dates(c.Holidays, s.First, s.Last))
	}
	if s.Zone != nil {
		differ("timezone", zoneName(existing), zoneName(c))
	}
	if s.BatchID != "" {
		differ("batch_id", existing.BatchID.String(), c.BatchID.String())
	}
	if s.Artifact != "" {
		differ("artifact", existing.Artifact.String(), c.Artifact.String())
	}
	if s.Signal != "" {
		differ("signal", existing.Signal.String(), c.Signal.String())
	}
	if s.Required != 0 {
		differ("required", boundaries(existing.Required), boundaries(c.Required))
		for _, b := range model.Ladder {
			if s.Deadlines[b] != "" {
				differ("deadlines."+b.String(), existing.Deadlines[b].Text, c.Deadlines[b].Text)
			}
		}
	}
	return out, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func zoneName(c *contract.Contract) string {
	if c.Location == nil {
		return "UTC"
	}
	return c.Location.String()
}

// dates writes the holidays within [from, to]: the history says nothing
// of the others.
func dates(ds []model.Date, from, to model.Date) string {
	var parts []string
	for _, d := range ds {
		if d.Compare(from) >= 0 && d.Compare(to) <= 0 {
			parts = append(parts, d.String())
		}
	}
	return strings.Join(parts, ", ")
}

func boundaries(set model.BoundarySet) string {
	var parts []string
	for _, b := range set.List() {
		parts = append(parts, b.String())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

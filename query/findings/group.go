package findings

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

// GroupBy names how `handoff findings --group-by` groups findings for the
// summary a person reads first.
type GroupBy string

// Groupings.
const (
	GroupPipeline GroupBy = "pipeline"
	GroupOwner    GroupBy = "owner"
	// GroupRoot groups by incident: the batch at the root of the chain of
	// upstream batches that blocks a finding's batch (its own batch when
	// nothing upstream blocks it).
	GroupRoot GroupBy = "root"
)

// groupKeys gives each grouping the key of a finding's group.
var groupKeys = map[GroupBy]func(f *detect.Finding) string{
	GroupPipeline: func(f *detect.Finding) string { return f.Batch.Pipeline },
	GroupOwner:    func(f *detect.Finding) string { return f.Owner },
	GroupRoot:     rootOf,
}

// Groupings returns the names --group-by takes, sorted.
func Groupings() []string {
	out := make([]string, 0, len(groupKeys))
	for g := range groupKeys {
		out = append(out, string(g))
	}
	sort.Strings(out)
	return out
}

// Group is the account of the findings of one group: how many, how many
// open, by kind, the oldest raised and the worst lateness (with its
// batch).
type Group struct {
	Key      string // "" when the findings name none (no owner)
	Findings int
	Open     int
	Kinds    map[string]int
	// Oldest is the earliest raised_at of the group's findings.
	Oldest time.Time
	// Worst is the greatest Late of the group's findings, as of the
	// listing's as-of; WorstBatch its batch ("" when none is late).
	Worst      time.Duration
	WorstBatch string
}

// Groups groups res's findings by g, lateness counted to asOf (Late):
// the groups with the most open findings first, then the latest, then by
// key.
func Groups(res Result, g GroupBy, asOf time.Time) []Group {
	key := groupKeys[g]
	byKey := map[string]*Group{}
	var order []*Group
	for i := range res.Findings {
		f := &res.Findings[i]
		k := key(f)
		gr := byKey[k]
		if gr == nil {
			gr = &Group{Key: k, Kinds: map[string]int{}, Oldest: f.RaisedAt}
			byKey[k] = gr
			order = append(order, gr)
		}
		gr.Findings++
		if f.State == StateOpen {
			gr.Open++
		}
		gr.Kinds[string(f.Kind)]++
		if f.RaisedAt.Before(gr.Oldest) {
			gr.Oldest = f.RaisedAt
		}
		if l := Late(f, asOf); l > gr.Worst || (l > 0 && l == gr.Worst && f.Batch.String() < gr.WorstBatch) {
			gr.Worst, gr.WorstBatch = l, f.Batch.String()
		}
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.Open != b.Open {
			return a.Open > b.Open
		}
		if a.Worst != b.Worst {
			return a.Worst > b.Worst
		}
		return a.Key < b.Key
	})
	out := make([]Group, len(order))
	for i, gr := range order {
		out[i] = *gr
	}
	return out
}

// kindNames returns the kinds of gr, most findings first, then by name.
func (gr *Group) kindNames() []string {
	names := make([]string, 0, len(gr.Kinds))
	for k := range gr.Kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if gr.Kinds[names[i]] != gr.Kinds[names[j]] {
			return gr.Kinds[names[i]] > gr.Kinds[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// WriteGroupsText writes the groups of res by g for a person: a header
// (the grouping's name, FINDINGS when both states are listed, OPEN, KINDS,
// OLDEST, WORST_LATE, WORST_BATCH), one aligned line per group (Groups'
// order), and the summary line of the listing with the number of groups.
// Times are UTC (the groups cross pipelines, and so zones).
func WriteGroupsText(w io.Writer, res Result, g GroupBy, state string, asOf time.Time) error {
	bw := bufio.NewWriter(w)
	groups := Groups(res, g, asOf)
	if len(groups) > 0 {
		cols := []string{strings.ToUpper(string(g))}
		if state == "" {
			cols = append(cols, "FINDINGS")
		}
		cols = append(cols, "OPEN", "KINDS", "OLDEST", "WORST_LATE", "WORST_BATCH")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
		for i := range groups {
			gr := &groups[i]
			var kinds []string
			for _, k := range gr.kindNames() {
				kinds = append(kinds, k+" "+strconv.Itoa(gr.Kinds[k]))
			}
			line := []string{dash(gr.Key)}
			if state == "" {
				line = append(line, strconv.Itoa(gr.Findings))
			}
			line = append(line, strconv.Itoa(gr.Open), strings.Join(kinds, ", "), stamp(gr.Oldest, nil), late(gr.Worst), dash(gr.WorstBatch))
			for i := range line {
				line[i] = model.EscapeText(line[i])
			}
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	s := Summary(res, state)
	if len(groups) > 0 {
		s += "; " + count(len(groups), string(g)+" group")
	}
	fmt.Fprintln(bw, model.EscapeText(s))
	return bw.Flush()
}

// WriteGroupsJSON writes the groups of res by g as one JSON object:
// {"group_by":"pipeline","count":N,"truncated":false,"groups":[{"group":
// ...,"findings":N,"open":N,"kinds":{...},"oldest_raised_at":...,
// "worst_lateness_ms":N,"worst_batch":...}]}, count being the findings
// grouped, lateness counted to asOf (Late, and lateness_as_of gives it
// when set); a group without a key (no owner) has "group":"".
func WriteGroupsJSON(w io.Writer, res Result, g GroupBy, asOf time.Time) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"group_by\":\"%s\",\"count\":%d,\"truncated\":%t", g, len(res.Findings), res.Truncated)
	if !asOf.IsZero() {
		bw.Write(appendTime(nil, "lateness_as_of", asOf))
	}
	bw.WriteString(",\"groups\":[")
	var b []byte
	for i, gr := range Groups(res, g, asOf) {
		if i > 0 {
			bw.WriteByte(',')
		}
		b = append(b[:0], "\n{\"group\":"...)
		b = model.AppendJSONString(b, gr.Key)
		b = appendKey(b, "findings")
		b = strconv.AppendInt(b, int64(gr.Findings), 10)
		b = appendKey(b, "open")
		b = strconv.AppendInt(b, int64(gr.Open), 10)
		b = appendKey(b, "kinds")
		b = append(b, '{')
		names := gr.kindNames()
		sort.Strings(names)
		for j, k := range names {
			if j > 0 {
				b = append(b, ',')
			}
			b = model.AppendJSONString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(gr.Kinds[k]), 10)
		}
		b = append(b, '}')
		b = appendTime(b, "oldest_raised_at", gr.Oldest)
		b = appendKey(b, "worst_lateness_ms")
		b = strconv.AppendInt(b, gr.Worst.Milliseconds(), 10)
		b = appendKey(b, "worst_batch")
		b = model.AppendJSONString(b, gr.WorstBatch)
		b = append(b, '}')
		bw.Write(b)
	}
	if len(res.Findings) > 0 {
		bw.WriteByte('\n')
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// rootOf is the key of f's incident: its root batch when the record names
// it, else the incident's fingerprint (a stored blocked finding keeps the
// fingerprint only), else its own batch.
func rootOf(f *detect.Finding) string {
	switch {
	case f.RootBatch != "":
		return f.RootBatch
	case f.Root != "":
		return f.Root
	}
	return f.Batch.String()
}

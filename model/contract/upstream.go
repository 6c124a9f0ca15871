package contract

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/handoff-dev/handoff/model"
)

// Upstream is one pipeline a contract's pipeline depends on: a batch of
// this pipeline needs the named pipeline's batch of a related business
// date to be delivered first (docs/contracts.md, upstreams).
type Upstream struct {
	Pipeline string
	// Date says which of the upstream's batches: SameDate (the default),
	// PreviousDate (the upstream's scheduled date before this batch's), or
	// OffsetDays days away (negative: earlier).
	Date       UpstreamDate
	OffsetDays int
	// From says where the upstream came from: "upstreams" (the contract)
	// or "openlineage" (an input dataset that is another claimed job's
	// output).
	From string
	// Line is the line of the contract file that declares it (0: built in
	// code), for load errors.
	Line int
}

// UpstreamDate is how an upstream's batch date relates to the batch's.
type UpstreamDate string

// Upstream dates.
const (
	SameDate     UpstreamDate = "same"
	PreviousDate UpstreamDate = "previous"
	OffsetDate   UpstreamDate = "offset"
)

// Text is the date rule as a contract writes it: same, previous or "-2d".
func (u Upstream) Text() string {
	if u.Date == OffsetDate {
		return strconv.Itoa(u.OffsetDays) + "d"
	}
	if u.Date == "" {
		return string(SameDate)
	}
	return string(u.Date)
}

// UpstreamKey returns the batch of upstream u that batch key of c's
// pipeline needs, and false when the upstream's contract (uc) cannot name
// it: no batch id derives from its date, or its schedule has no date
// before (PreviousDate).
func UpstreamKey(key model.BatchKey, u Upstream, uc *Contract) (model.BatchKey, bool) {
	date := key.BusinessDate
	switch u.Date {
	case PreviousDate:
		// The upstream's own previous firing before this date: the batch
		// of the day before under a daily schedule, Friday's for a
		// Monday under weekdays.
		same, ok := batchOn(uc, u.Pipeline, date)
		if !ok {
			return model.BatchKey{}, false
		}
		if !uc.IsHoliday(date) && firesOn(uc, date) {
			prev, ok := uc.Previous(same)
			if !ok {
				return model.BatchKey{}, false
			}
			return prev, true
		}
		// No firing on the date itself: the latest one before it.
		for d, n := date.AddDays(-1), 0; n < 8*366; d, n = d.AddDays(-1), n+1 {
			if firesOn(uc, d) && !uc.IsHoliday(d) {
				return batchOn(uc, u.Pipeline, d)
			}
		}
		return model.BatchKey{}, false
	case OffsetDate:
		date = date.AddDays(u.OffsetDays)
	}
	return batchOn(uc, u.Pipeline, date)
}

func batchOn(c *Contract, pipeline string, date model.Date) (model.BatchKey, bool) {
	id, ok := c.ExpectedBatchID(pipeline, date)
	if !ok {
		return model.BatchKey{}, false
	}
	return model.BatchKey{Pipeline: pipeline, BusinessDate: date, BatchID: id}, true
}

// firesOn reports whether c's schedule fires on d (true without a
// schedule: every date has its batch).
func firesOn(c *Contract, d model.Date) bool {
	cal, ok := c.calendar()
	return !ok || cal.FiresOn(d)
}

func (p *parser) upstreams(n *yaml.Node, c *Contract) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		p.fail(n, "upstreams", "want a list of upstreams (- pipeline: NAME, date: same|previous|-Nd), got %s", describe(n))
		return
	}
	seen := map[string]int{}
	for i, item := range n.Content {
		item = resolve(item)
		key := fmt.Sprintf("upstreams[%d]", i)
		u := Upstream{Date: SameDate, From: "upstreams", Line: item.Line}
		if item.Kind == yaml.ScalarNode {
			// The short form: a pipeline name, same business date.
			s, ok := p.str(item, key)
			if !ok {
				continue
			}
			u.Pipeline = s
		} else {
			hasPipeline := false
			for _, e := range p.mapping(item, key, []string{"pipeline", "date"}) {
				s, ok := p.str(e.v, key+"."+e.key)
				if !ok {
					continue
				}
				switch e.key {
				case "pipeline":
					u.Pipeline, hasPipeline = s, true
				case "date":
					if err := parseUpstreamDate(s, &u); err != nil {
						p.fail(e.v, key+".date", "%q: %v", s, err)
					}
				}
			}
			if !hasPipeline {
				p.fail(item, key+".pipeline", "missing: which pipeline this one depends on")
				continue
			}
		}
		if u.Pipeline == "" {
			continue
		}
		if err := model.CheckName("pipeline", u.Pipeline); err != nil {
			p.fail(item, key+".pipeline", "%q: %s", u.Pipeline, reason(err))
			continue
		}
		if first, dup := seen[u.Pipeline]; dup {
			p.fail(item, key+".pipeline", "%q is listed twice (first at line %d): one entry per upstream pipeline", u.Pipeline, first)
			continue
		}
		seen[u.Pipeline] = item.Line
		c.Upstreams = append(c.Upstreams, u)
	}
}

func parseUpstreamDate(s string, u *Upstream) error {
	switch UpstreamDate(s) {
	case SameDate, PreviousDate:
		u.Date = UpstreamDate(s)
		return nil
	}
	num, ok := strings.CutSuffix(s, "d")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n > 0 || n < -366 || !strings.HasPrefix(num, "-") {
		return errors.New("want same, previous, or an offset of days back such as \"-2d\" (from -1d to -366d)")
	}
	u.Date, u.OffsetDays = OffsetDate, n
	return nil
}

// openLineageInputs reads openlineage.inputs: the input datasets of the
// pipeline's job, each a name template over the batch's identity.
func (p *parser) openLineageInputs(n *yaml.Node, ol *OpenLineage) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		p.fail(n, "openlineage.inputs", "want a list of dataset names (namespace/name, templates allowed), got %s", describe(n))
		return
	}
	for i, item := range n.Content {
		key := fmt.Sprintf("openlineage.inputs[%d]", i)
		s, ok := p.str(resolve(item), key)
		if !ok {
			continue
		}
		t, err := ParseTemplate(s)
		if err != nil {
			p.failErr(item, key, err)
			continue
		}
		if t.Uses("batch_id") {
			p.fail(item, key, "%q: an input names the upstream's batch by date placeholders such as {yyyymmdd}, not {batch_id}", s)
			continue
		}
		ol.Inputs = append(ol.Inputs, Input{Name: t, Line: item.Line})
	}
}

// Input is one input dataset of a pipeline's OpenLineage job.
type Input struct {
	Name Template
	Line int
}

// linkUpstreams completes and checks the upstreams of a set's contracts:
// an OpenLineage input that is another contract's artifact (the last path
// element of the dataset name, as docs/openlineage.md maps outputs) adds
// that pipeline as an upstream on the same date, unless the contract
// lists the pipeline itself (the contract wins); an upstream no contract
// defines, one whose batches cannot be named from a date, and a cycle are
// errors at the line that declares them.
func linkUpstreams(s *Set) error {
	var errs []error
	fail := func(c *Contract, line int, key, format string, args ...any) {
		errs = append(errs, &ParseError{Source: c.Name(), Line: line, Key: key, Err: fmt.Errorf(format, args...)})
	}
	sample := model.BatchKey{BusinessDate: model.Date{Year: 2026, Month: 9, Day: 30}}
	for _, name := range s.pipelines {
		c := s.byPipeline[name]
		if c.OpenLineage == nil || len(c.OpenLineage.Inputs) == 0 {
			continue
		}
		for _, in := range c.OpenLineage.Inputs {
			k := sample
			k.Pipeline = c.Pipeline
			want := path.Base(in.Name.Render(k))
			for _, other := range s.pipelines {
				oc := s.byPipeline[other]
				if other == name || oc.OpenLineage == nil || oc.Artifact.IsZero() {
					continue
				}
				ok := sample
				ok.Pipeline = other
				if id, has := oc.ExpectedBatchID(other, sample.BusinessDate); has {
					ok.BatchID = id
				}
				art, has := oc.ArtifactName(ok)
				if !has || path.Base(art) != want {
					continue
				}
				if !slicesHas(c.Upstreams, other) {
					c.Upstreams = append(c.Upstreams, Upstream{Pipeline: other, Date: SameDate, From: "openlineage", Line: in.Line})
				}
			}
		}
	}
	for _, name := range s.pipelines {
		c := s.byPipeline[name]
		for i, u := range c.Upstreams {
			key := fmt.Sprintf("upstreams[%d].pipeline", i)
			if u.From == "openlineage" {
				key = "openlineage.inputs"
			}
			uc, ok := s.byPipeline[u.Pipeline]
			switch {
			case u.Pipeline == c.Pipeline:
				fail(c, u.Line, key, "%q is this contract's own pipeline: a batch cannot wait for itself (continuity with the previous batch is checked already)", u.Pipeline)
			case !ok:
				fail(c, u.Line, key, "%q: no contract defines this pipeline: add its contract beside this one, or remove the upstream", u.Pipeline)
			default:
				k := sample
				k.Pipeline = c.Pipeline
				if _, ok := UpstreamKey(k, u, uc); !ok {
					fail(c, u.Line, key, "%q (%s): its batches cannot be named from a date: its contract needs a batch_id template and a schedule that fires once a day", u.Pipeline, uc.Name())
				}
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// A cycle, found by a depth-first walk in pipeline order so the error
	// is the same on every load: reported once, at the edge that closes it.
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		colour[name] = grey
		stack = append(stack, name)
		c := s.byPipeline[name]
		for i, u := range c.Upstreams {
			switch colour[u.Pipeline] {
			case white:
				visit(u.Pipeline)
			case grey:
				j := len(stack) - 1
				for stack[j] != u.Pipeline {
					j--
				}
				loop := append(append([]string(nil), stack[j:]...), u.Pipeline)
				fail(c, u.Line, fmt.Sprintf("upstreams[%d].pipeline", i), "%q closes a cycle of upstreams (%s): a chain of deliveries must end somewhere, remove one of the links",
					u.Pipeline, strings.Join(loop, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		colour[name] = black
	}
	for _, name := range s.pipelines {
		if colour[name] == white {
			visit(name)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	s.downstreams = map[string][]string{}
	for _, name := range s.pipelines {
		for _, u := range s.byPipeline[name].Upstreams {
			s.downstreams[u.Pipeline] = append(s.downstreams[u.Pipeline], name)
		}
	}
	for _, ds := range s.downstreams {
		sort.Strings(ds)
	}
	return nil
}

func slicesHas(us []Upstream, pipeline string) bool {
	for _, u := range us {
		if u.Pipeline == pipeline {
			return true
		}
	}
	return false
}

// Downstreams returns the pipelines that list pipeline as an upstream,
// sorted.
func (s *Set) Downstreams(pipeline string) []string {
	if s == nil {
		return nil
	}
	return s.downstreams[pipeline]
}

// HasUpstreams reports whether any contract of the set lists an upstream.
func (s *Set) HasUpstreams() bool { return s != nil && len(s.downstreams) > 0 }

package contract

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/handoff-dev/handoff/model"
)

// OpenLineage says how a scheduler's OpenLineage run events map to this
// pipeline's batches (docs/openlineage.md): which job is the pipeline's,
// and where a run's business date comes from. Runs of one batch, retries
// with new run ids included, map to one batch because the identity comes
// from here, never from the run id.
type OpenLineage struct {
	// Job matches the job name. Literal text matches exactly; date and
	// time placeholders ({yyyymmdd}, {business_date}, {hh}, ...) read the
	// business date out of the name.
	Job Template
	// Namespace, when set, must equal the job's namespace.
	Namespace string
	// Date says where the business date comes from when Job names none.
	Date DateSource
	// Facet is the run facet field holding the date, for DateFacet:
	// "facet.field" (a string, YYYY-MM-DD or RFC 3339).
	Facet string
	// System is the side whose job this is (default producer).
	System model.System
	// Inputs are the job's input datasets: one that is another claimed
	// job's output makes that pipeline an upstream (linkUpstreams).
	Inputs []Input
}

// DateSource is where a run's business date comes from.
type DateSource string

// Date sources.
const (
	// DateNominalStart: the date of the run's nominalTime facet's
	// nominalStartTime, in the contract's time zone (the default: a
	// scheduler's logical date or data interval start).
	DateNominalStart DateSource = "nominal_start"
	DateNominalEnd   DateSource = "nominal_end"
	// DateEventTime: the date of the event's eventTime in the contract's
	// time zone.
	DateEventTime DateSource = "event_time"
	// DateFacet: a run facet field (Facet).
	DateFacet DateSource = "facet"
)

// BatchAt returns the batch of the firing at hh:mi on date (for a schedule
// that fires once a day, hh and mi are ignored by a batch id without
// {hh} and {mi}); false when no batch id can be derived.
func (c *Contract) BatchAt(date model.Date, hh, mi int) (model.BatchKey, bool) {
	return c.batchAt(c.Pipeline, date, hh, mi)
}

// Read reads s, a name rendered by t, back into the date and time of day it
// names. hasDate is false when t names no date; ok is false when s does not
// have t's shape. {batch_id} cannot be read (use Contract.Identify).
func (t Template) Read(s, pipeline string) (date model.Date, hh, mi int, hasDate, ok bool) {
	st, ok := t.match(s, pipeline)
	if !ok {
		return model.Date{}, 0, 0, false, false
	}
	hh, mi = max(st.hour, 0), max(st.minute, 0)
	if st.year < 0 || st.month < 0 || st.day < 0 {
		return model.Date{}, hh, mi, false, true
	}
	d := model.Date{Year: st.year, Month: time.Month(st.month), Day: st.day}
	if _, err := model.ParseDate(d.String()); err != nil {
		return model.Date{}, 0, 0, false, false
	}
	return d, hh, mi, true, true
}

func (p *parser) openLineage(n *yaml.Node, c *Contract) {
	ol := &OpenLineage{Date: DateNominalStart, System: model.Producer}
	hasJob, jobGiven := false, false
	for _, e := range p.mapping(n, "openlineage", []string{"job", "namespace", "business_date", "system", "inputs"}) {
		if e.key == "inputs" {
			p.openLineageInputs(e.v, ol)
			continue
		}
		key := "openlineage." + e.key
		s, ok := p.str(e.v, key)
		if !ok {
			continue
		}
		switch e.key {
		case "job":
			jobGiven = true
			t, err := ParseTemplate(s)
			if err != nil {
				p.failErr(e.v, key, err)
				continue
			}
			if t.Uses("batch_id") {
				p.fail(e.v, key, "%q: a job name cannot be read through {batch_id}: use date placeholders such as {yyyymmdd}", s)
				continue
			}
			ol.Job, hasJob = t, true
		case "namespace":
			ol.Namespace = s
		case "business_date":
			switch DateSource(s) {
			case DateNominalStart, DateNominalEnd, DateEventTime:
				ol.Date = DateSource(s)
			default:
				f, ok := strings.CutPrefix(s, "facet:")
				if !ok || !strings.Contains(f, ".") || strings.HasPrefix(f, ".") || strings.HasSuffix(f, ".") {
					p.fail(e.v, key, "%q: want nominal_start, nominal_end, event_time or facet:NAME.FIELD (a run facet's field)", s)
					continue
				}
				ol.Date, ol.Facet = DateFacet, f
			}
		case "system":
			sys := model.System(s)
			if !sys.Known() {
				p.fail(e.v, key, "%q: want producer, exchange, consumer or operator", s)
				continue
			}
			ol.System = sys
		}
	}
	if !hasJob {
		if jobGiven {
			return // its error is reported
		}
		p.fail(n, "openlineage.job", "missing: which OpenLineage job is this pipeline's (its name, or a template over it)")
		return
	}
	c.OpenLineage = ol
}

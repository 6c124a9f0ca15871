package serve

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// Limits on what a request may ask for. A request over them gets a 400
// naming the parameter, before anything reaches ClickHouse.
const (
	// MaxPageSize is the largest page of a list.
	MaxPageSize = 500
	// DefaultPageSize is the page size when none is given.
	DefaultPageSize = 100
	// MaxRangeDays is the longest range of business dates a request may
	// cover (a year and a day, so a leap year fits).
	MaxRangeDays = 367
	// DefaultMaxScanEvents is how many events one list or grid request
	// reads at most unless Options.MaxScanEvents says otherwise (about
	// 50,000 batches of ten events).
	DefaultMaxScanEvents = 500_000
	// maxPage bounds the page parameter.
	maxPage = 100_000
	// MaxParamLen bounds any one query-string value.
	MaxParamLen = 256
	// maxQueryBytes bounds the whole query string.
	maxQueryBytes = 4096
)

// paramError is a bad request parameter: HTTP 400 with the parameter named.
type paramError struct {
	param, reason string
}

func (e *paramError) Error() string { return fmt.Sprintf("parameter %s: %s", e.param, e.reason) }

func badParam(param, format string, args ...any) error {
	return &paramError{param: param, reason: fmt.Sprintf(format, args...)}
}

// params reads a request's query string, refusing what it does not know.
type params struct {
	v url.Values
}

// anyName, as the only known name, lets parseParams accept any parameter
// name (checked by whoever reads them).
const anyName = "*"

// parseParams checks the query string: its size, each value's length, and
// that every name is one of known (a typo must not silently widen a
// filter).
func parseParams(raw string, known ...string) (params, error) {
	if len(raw) > maxQueryBytes {
		return params{}, badParam("query", "the query string is %d bytes, more than %d", len(raw), maxQueryBytes)
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return params{}, badParam("query", "not a valid query string: %v", err)
	}
	for name, vals := range v {
		ok := len(known) == 1 && known[0] == anyName
		for _, k := range known {
			ok = ok || k == name
		}
		if !ok {
			return params{}, badParam(clip(name), "unknown parameter; this endpoint takes %v", known)
		}
		if len(vals) > 1 {
			return params{}, badParam(name, "given %d times; give it once", len(vals))
		}
		if len(vals[0]) > MaxParamLen {
			return params{}, badParam(name, "%d bytes long, more than %d", len(vals[0]), MaxParamLen)
		}
	}
	return params{v: v}, nil
}

// clip shortens a name for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func (p params) str(name string) string { return p.v.Get(name) }

// pipeline returns the pipeline parameter ("" when absent), checked as
// events' pipelines are.
func (p params) pipeline() (string, error) {
	s := p.v.Get("pipeline")
	if s == "" {
		return "", nil
	}
	if err := model.CheckName("pipeline", s); err != nil {
		return "", badParam("pipeline", "%v", err)
	}
	return s, nil
}

// date returns the named YYYY-MM-DD parameter, or def when absent.
func (p params) date(name string, def model.Date) (model.Date, error) {
	s := p.v.Get(name)
	if s == "" {
		return def, nil
	}
	d, err := model.ParseDate(s)
	if err != nil {
		return model.Date{}, badParam(name, "%q is not a date: want YYYY-MM-DD (%v)", clip(s), err)
	}
	return d, nil
}

// dates returns from..to, defaulting to the days days up to today, and
// refuses an inverted or too long range.
func (p params) dates(today model.Date, days int) (dateRange, error) {
	to, err := p.date("to", today)
	if err != nil {
		return dateRange{}, err
	}
	from, err := p.date("from", to.AddDays(-(days - 1)))
	if err != nil {
		return dateRange{}, err
	}
	if from.Compare(to) > 0 {
		return dateRange{}, badParam("from", "%s is after to=%s", from, to)
	}
	if n := to.DaysSinceEpoch() - from.DaysSinceEpoch() + 1; n > MaxRangeDays {
		return dateRange{}, badParam("from", "the range %s..%s is %d days, more than %d: narrow it", from, to, n, MaxRangeDays)
	}
	return dateRange{from: from, to: to}, nil
}

// page returns the page (from 1) and size parameters.
func (p params) page() (page, size int, err error) {
	page, size = 1, DefaultPageSize
	if s := p.v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPage {
			return 0, 0, badParam("page", "%q: want a whole number from 1 to %d", clip(s), maxPage)
		}
		page = n
	}
	if s := p.v.Get("size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, 0, badParam("size", "%q: want a whole number from 1 to %d", clip(s), MaxPageSize)
		}
		size = n
	}
	return page, size, nil
}

// oneOf returns the named parameter when it is one of allowed ("" when
// absent).
func (p params) oneOf(name string, allowed []string) (string, error) {
	s := p.v.Get(name)
	if s == "" {
		return "", nil
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", badParam(name, "%q: want one of %v", clip(s), allowed)
}

// statusNames and verdictNames are the values the status and verdict
// filters take.
var statusNames, verdictNames = func() ([]string, []string) {
	var st []string
	for _, s := range replay.Statuses {
		st = append(st, string(s))
	}
	var vs []string
	for _, h := range model.Hypotheses {
		vs = append(vs, h.String())
	}
	return st, append(vs, model.Delivered.String())
}()

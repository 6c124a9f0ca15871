package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// DefaultReruns is the re-run pattern of a contract that states none: the
// scheduled batch id, "-r" and the re-run's number ("20260930-r2").
const DefaultReruns = "{batch_id}-r{n}"

// DefaultAllowedLateness is how long, in stream time, an anomaly that
// depends on the order of events must keep holding before it is reported,
// when the contract does not say.
const DefaultAllowedLateness = 5 * time.Minute

// MaxAllowedLateness bounds allowed_lateness: a day of withheld anomalies
// would hide breaks rather than smooth out-of-order arrival.
const MaxAllowedLateness = 24 * time.Hour

// Reruns says what the batch id of a re-run looks like: a scheduled batch
// id ({batch_id}) and a re-run number ({n}, a whole number from 1 with no
// leading zero) with literal text around and between them. A batch whose
// id has that shape, and whose {batch_id} part is the id the contract
// derives for its date (any id, without a batch_id template), is an
// attempt of that date rather than a batch of its own. The zero Reruns is
// DefaultReruns.
type Reruns struct {
	text                   string
	prefix, middle, suffix string
	off                    bool
	set                    bool
}

// ParseReruns parses a re-run pattern: "none" (re-runs are not declared:
// every other id is an identity_mismatch) or text with exactly one
// {batch_id} followed, after some literal text, by exactly one {n}.
func ParseReruns(s string) (Reruns, error) {
	if s == "none" {
		return Reruns{text: s, off: true, set: true}, nil
	}
	i := strings.Index(s, "{batch_id}")
	j := strings.Index(s, "{n}")
	switch {
	case i < 0 || j < 0:
		return Reruns{}, fmt.Errorf("%q: want {batch_id} and {n} in it, such as %q, or none", s, DefaultReruns)
	case strings.Count(s, "{batch_id}") > 1 || strings.Count(s, "{n}") > 1:
		return Reruns{}, fmt.Errorf("%q: {batch_id} and {n} may each appear once", s)
	case j < i:
		return Reruns{}, fmt.Errorf("%q: {n} must come after {batch_id} (%q)", s, DefaultReruns)
	}
	r := Reruns{text: s, prefix: s[:i], middle: s[i+len("{batch_id}") : j], suffix: s[j+len("{n}"):], set: true}
	if r.middle == "" {
		return Reruns{}, fmt.Errorf("%q: want literal text between {batch_id} and {n} (as in %q): without it 2026093012 could be a re-run of 20260930 or a batch of its own", s, DefaultReruns)
	}
	for _, lit := range []string{r.prefix, r.middle, r.suffix} {
		if strings.ContainsAny(lit, "{}/ \t") {
			return Reruns{}, fmt.Errorf("%q: only {batch_id} and {n} may be placeholders, and a batch id has no '/' or spaces", s)
		}
	}
	return r, nil
}

func (r Reruns) eff() Reruns {
	if !r.set {
		// ParseReruns(DefaultReruns), written out: the replay splits
		// every batch id it evaluates (TestDefaultRerunsParsed).
		return Reruns{text: DefaultReruns, middle: "-r", set: true}
	}
	return r
}

// String returns the pattern as written ("none" when off).
func (r Reruns) String() string { return r.eff().text }

// Off reports whether re-runs are not declared.
func (r Reruns) Off() bool { return r.eff().off }

// Split reads id as a re-run: the scheduled id it re-runs and its number.
func (r Reruns) Split(id string) (base string, n int, ok bool) {
	r = r.eff()
	if r.off {
		return "", 0, false
	}
	core, ok1 := strings.CutPrefix(id, r.prefix)
	core, ok2 := strings.CutSuffix(core, r.suffix)
	if !ok1 || !ok2 {
		return "", 0, false
	}
	// Most ids are no re-run and have no middle at all: Contains says so
	// faster than LastIndex.
	if !strings.Contains(core, r.middle) {
		return "", 0, false
	}
	k := strings.LastIndex(core, r.middle)
	if k <= 0 {
		return "", 0, false
	}
	digits := core[k+len(r.middle):]
	if digits == "" || digits[0] == '0' || len(digits) > 6 {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 {
		return "", 0, false
	}
	return core[:k], n, true
}

// Render returns the id of re-run n of the scheduled id base.
func (r Reruns) Render(base string, n int) string {
	r = r.eff()
	return r.prefix + base + r.middle + strconv.Itoa(n) + r.suffix
}

// AttemptOf reads key as an attempt of its date's scheduled batch: a
// declared re-run returns the scheduled batch's key, its re-run number
// (1 or more) and true; any other key returns key itself, 0 and false.
// A re-run is declared when its id has the contract's re-run shape and
// the {batch_id} part derives from the business date: the id
// ExpectedBatchID gives, or for a sub-daily schedule an id that names a
// time of the date; without a batch_id template, any id.
func (c *Contract) AttemptOf(key model.BatchKey) (model.BatchKey, int, bool) {
	base, n, ok := c.Reruns.Split(key.BatchID)
	if !ok {
		return key, 0, false
	}
	bk := model.BatchKey{Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: base}
	if !c.derivesID(bk) {
		return key, 0, false
	}
	return bk, n, true
}

// derivesID reports whether k's batch id derives from its business date
// under the batch_id template (always, without one).
func (c *Contract) derivesID(k model.BatchKey) bool {
	if c.BatchID.IsZero() {
		return true
	}
	if want, ok := c.ExpectedBatchID(k.Pipeline, k.BusinessDate); ok {
		return want == k.BatchID
	}
	if !c.BatchID.usesTime() {
		return c.BatchID.Render(k) == k.BatchID
	}
	hh, mi, ok := c.slotOf(k)
	return ok && c.BatchID.renderAt(k, hh, mi) == k.BatchID
}

// AllowedLatenessOf returns the contract's allowed lateness:
// DefaultAllowedLateness unless it sets one (0 included).
func (c *Contract) AllowedLatenessOf() time.Duration {
	if !c.HasAllowedLateness {
		return DefaultAllowedLateness
	}
	return c.AllowedLateness
}

// parseAllowedLateness reads allowed_lateness: a Go duration from 0 to
// MaxAllowedLateness.
func parseAllowedLateness(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a Go duration such as 5m or 90s", s)
	}
	if d < 0 || d > MaxAllowedLateness {
		return 0, fmt.Errorf("%q: want 0 to %s", s, MaxAllowedLateness)
	}
	return d, nil
}

// attempts parses the keys of re-runs and allowed lateness.
func (p *parser) attempts(e *entry, c *Contract) {
	s, ok := p.str(e.v, e.key)
	if !ok {
		return
	}
	switch e.key {
	case "reruns":
		r, err := ParseReruns(s)
		if err != nil {
			p.failErr(e.v, e.key, err)
			return
		}
		c.Reruns = r
	case "allowed_lateness":
		d, err := parseAllowedLateness(s)
		if err != nil {
			p.failErr(e.v, e.key, err)
			return
		}
		c.AllowedLateness, c.HasAllowedLateness = d, true
	}
}

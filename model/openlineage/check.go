package openlineage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// firstDuplicate returns the path of the first member an object of data
// states twice ("run.facets.x"), and false when there is none. A
// duplicate is ambiguous (decoders keep the first or the last), so, as
// handoff's own decoder does, it is refused. data is valid JSON.
func firstDuplicate(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var walk func(path string) (string, bool, error)
	walk = func(path string) (string, bool, error) {
		tok, err := dec.Token()
		if err != nil {
			return "", false, err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return "", false, nil
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", false, err
				}
				k, _ := kt.(string)
				p := k
				if path != "" {
					p = path + "." + k
				}
				if seen[k] {
					return p, true, nil
				}
				seen[k] = true
				if dup, found, err := walk(p); found || err != nil {
					return dup, found, err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if dup, found, err := walk(fmt.Sprintf("%s[%d]", path, i)); found || err != nil {
					return dup, found, err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return "", false, err
	}
	p, found, err := walk("")
	if err != nil && err != io.EOF {
		return "", false
	}
	return p, found
}

// count reads an outputStatistics number: a whole number from 0 to the
// largest int64 (1e30 or 1.5 are not row counts).
func count(field string, n json.Number) (int64, error) {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err == nil && v >= 0 {
		return v, nil
	}
	if f, ferr := strconv.ParseFloat(string(n), 64); ferr == nil && f == math.Trunc(f) && f >= 0 && f <= math.MaxInt64 {
		return int64(f), nil // 1e3, 120345.0
	}
	return 0, &Error{field, fmt.Sprintf("%s: want a whole number from 0 to %d", n, int64(math.MaxInt64))}
}

// checkText refuses control characters (a NUL, ESC, C1) and bidi controls
// in a field copied into handoff's events, where they would reach attrs,
// ClickHouse and terminals.
func checkText(field, s string) error {
	for _, r := range s {
		if model.IsControl(r) || model.IsBidiControl(r) {
			return &Error{field, fmt.Sprintf("%q: contains a control character", s)}
		}
	}
	return nil
}

// CheckClaims refuses contracts of which two claim the same OpenLineage
// job: every event of that job would map to whichever comes first, and a
// literal job name would silently win over a template that also matches
// it. The error names both contracts' files and the job. Two claims
// overlap when their namespaces may be the same (equal, or one of them
// any) and a job name one renders, for sample dates and times, is read by
// the other.
func CheckClaims(contracts Contracts) error {
	type claim struct {
		c  *contract.Contract
		ol *contract.OpenLineage
	}
	var claims []claim
	for _, p := range contracts.Pipelines() {
		if c := contracts.For(p); c != nil && c.OpenLineage != nil {
			claims = append(claims, claim{c, c.OpenLineage})
		}
	}
	var problems []string
	for i := range claims {
		for j := i + 1; j < len(claims); j++ {
			a, b := claims[i], claims[j]
			if a.ol.Namespace != "" && b.ol.Namespace != "" && a.ol.Namespace != b.ol.Namespace {
				continue
			}
			if job, ok := overlap(a.c, b.c); ok {
				problems = append(problems, fmt.Sprintf("%s (pipeline %s, job %q) and %s (pipeline %s, job %q) both claim OpenLineage job %q: make the job templates or namespaces distinct",
					source(a.c), a.c.Pipeline, a.ol.Job.String(), source(b.c), b.c.Pipeline, b.ol.Job.String(), job))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("openlineage: %s", strings.Join(problems, "; "))
	}
	return nil
}

func source(c *contract.Contract) string {
	if c.Source == "" {
		return "the default contract"
	}
	return c.Source
}

// overlap returns a job name both contracts' job templates claim.
func overlap(a, b *contract.Contract) (string, bool) {
	if a.OpenLineage.Job.String() == b.OpenLineage.Job.String() {
		return a.OpenLineage.Job.String(), true
	}
	for _, d := range []string{"2026-09-30", "2027-01-05", "2028-12-31"} {
		date := model.MustParseDate(d)
		for _, pair := range [][2]*contract.Contract{{a, b}, {b, a}} {
			from, to := pair[0], pair[1]
			name := from.OpenLineage.Job.Render(model.BatchKey{Pipeline: from.Pipeline, BusinessDate: date, BatchID: date.Compact()})
			if _, _, _, _, ok := to.OpenLineage.Job.Read(name, to.Pipeline); ok {
				return name, true
			}
		}
	}
	return "", false
}

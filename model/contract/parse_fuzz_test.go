package contract_test

import (
	"errors"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// FuzzParse checks that Parse never panics, that every failure is a located
// *ParseError, and that every contract it accepts is usable: a pipeline, a
// non-empty required set, and deadlines only for required boundaries.
func FuzzParse(f *testing.F) {
	seeds := []string{
		fullContract,
		"pipeline: p\n",
		"pipeline: p\nrequired: [produced, consumed]\ndeadlines:\n  consumed: +2h\n",
		"pipeline: p\ndeadlines:\n  produced: &t business_date + 1d 06:00\n  consumed: *t\n",
		"pipeline: p\nbatch_id: {yyyymmdd}\n",
		"pipeline: p\nrows: {min: -1, equal: maybe}\n",
		"pipeline: p\n---\npipeline: q\n",
		"- a\n- b\n",
		"a: &a [*a]\n",
		"pipeline: p\ntimezone: Asia/Shanghai\nschedule: weekdays\n",
		"",
		"{",
		hourlyContract,
		"pipeline: p\nschedule: \"*/20 8-9 * * MON\"\nbatch_id: \"{business_date}T{hh}{mi}\"\nholidays: [2026-10-05]\n",
		"pipeline: p\nschedule: \"0 0 29 2 *\"\nbatch_id: \"{yyyymmdd}\"\ndeadlines:\n  produced: start + 1h\n",
		"pipeline: p\nlabels: {team: a, b_1: c}\nseverity: info\nowner: x\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := contract.Parse("f.yaml", data)
		if err != nil {
			var pe *contract.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %T is not a *ParseError: %v", err, err)
			}
			if c != nil {
				t.Fatal("Parse returned a contract and an error")
			}
			return
		}
		if err := model.CheckName("pipeline", c.Pipeline); err != nil {
			t.Fatalf("accepted pipeline %q: %v", c.Pipeline, err)
		}
		if c.Required == 0 || c.Location == nil {
			t.Fatalf("accepted contract without required boundaries or location: %+v", c)
		}
		key := model.BatchKey{Pipeline: c.Pipeline, BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
		none := func(model.Boundary) (_ time.Time, _ bool) { return }
		for _, b := range model.Ladder {
			if c.Deadlines[b].Kind != contract.NoDeadline && !c.Requires(b) {
				t.Fatalf("deadline for %s, which is not required", b)
			}
			c.Due(b, key, none, key.BusinessDate.In(c.Location))
		}
		c.Previous(key)
		// Every batch the calendar expects has a valid id, a start, and a
		// previous batch that starts no later and is expected too when it
		// falls in the range (key order need not be time order: an id may
		// put {mi} before {hh}).
		exp := c.Expected(key.BusinessDate, key.BusinessDate.AddDays(3))
		expected := map[model.BatchKey]bool{}
		for _, k := range exp {
			expected[k] = true
		}
		for _, k := range exp {
			if err := model.CheckName("batch_id", k.BatchID); err != nil {
				t.Fatalf("expected batch %v has a bad id: %v", k, err)
			}
			start, ok := c.Start(k)
			if !ok {
				t.Fatalf("expected batch %v has no start", k)
			}
			p, ok := c.Previous(k)
			if !ok {
				t.Fatalf("expected batch %v has no previous batch", k)
			}
			if ps, ok := c.Start(p); !ok || ps.After(start) {
				t.Fatalf("Previous(%v) = %v starts at %v, after %v", k, p, ps, start)
			}
			if p.BusinessDate.Compare(key.BusinessDate) >= 0 && !expected[p] {
				t.Fatalf("Previous(%v) = %v, which the calendar does not expect", k, p)
			}
		}
		if id, ok := c.ExpectedBatchID(c.Pipeline, key.BusinessDate); ok {
			if err := model.CheckName("batch_id", id); err != nil {
				t.Fatalf("batch_id template renders a bad id %q: %v", id, err)
			}
		}
	})
}

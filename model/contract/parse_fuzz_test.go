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
		if id, ok := c.ExpectedBatchID(c.Pipeline, key.BusinessDate); ok {
			if err := model.CheckName("batch_id", id); err != nil {
				t.Fatalf("batch_id template renders a bad id %q: %v", id, err)
			}
		}
	})
}

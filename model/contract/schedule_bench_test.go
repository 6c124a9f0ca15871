package contract_test

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// The detector asks these for every open batch and every calendar tick.
func BenchmarkSchedule(b *testing.B) {
	c := mustParse(b, "pipeline: p", "schedule: hourly", "timezone: Europe/London", `batch_id: "{yyyymmdd}{hh}"`,
		"holidays: [2026-12-25]", "deadlines:", `  produced: "start + 90m"`)
	key := model.BatchKey{Pipeline: "p", BusinessDate: model.MustParseDate("2026-10-25"), BatchID: "2026102500"}
	none := func(model.Boundary) (time.Time, bool) { return time.Time{}, false }
	b.Run("Expected/hourly-year", func(b *testing.B) {
		from, to := model.MustParseDate("2026-01-01"), model.MustParseDate("2026-12-31")
		for i := 0; i < b.N; i++ {
			if len(c.Expected(from, to)) != 364*24 {
				b.Fatal("wrong count")
			}
		}
	})
	b.Run("Previous/hourly", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, ok := c.Previous(key); !ok {
				b.Fatal("no previous")
			}
		}
	})
	b.Run("Dues/hourly-no-events", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, ok := c.Dues(key, none, time.Time{}); !ok[model.Produced] {
				b.Fatal("no deadline")
			}
		}
	})
}

package contract_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// TestDuesWithCarriedDays checks that deadlines worked out with the
// midnights carried from one call to the next (DuesWith and one Days) are
// exactly Dues', date after date, backwards, and by random jumps, in zones
// whose clocks change at midnight, skip a day, or move by half hours.
func TestDuesWithCarriedDays(t *testing.T) {
	zones := []string{"UTC", "Asia/Shanghai", "Europe/London", "America/Sao_Paulo", "America/Havana",
		"America/Santiago", "Pacific/Apia", "Australia/Lord_Howe", "America/St_Johns", "Asia/Kathmandu"}
	first := model.Date{Year: 2008, Month: time.January, Day: 1}
	const span = 12 * 366
	for _, name := range zones {
		loc := mustZone(t, name)
		c := contract.Default("p.daily")
		c.Location = loc
		// Absolute deadlines at times of day that fall in gaps and
		// repeats somewhere: every boundary its own.
		tods := []time.Duration{0, 30 * time.Minute, time.Hour, 2*time.Hour + 30*time.Minute, 6 * time.Hour, 23*time.Hour + 59*time.Minute, 24 * time.Hour}
		for i, b := range model.Ladder {
			c.Deadlines[b] = contract.Deadline{Kind: contract.Absolute, Days: i % 2, TimeOfDay: tods[i%len(tods)], Text: "x"}
		}
		never := func(model.Boundary) (time.Time, bool) { return time.Time{}, false }
		r := rand.New(rand.NewPCG(7, uint64(len(name))))
		orders := map[string]func(i int) model.Date{
			"forward":  func(i int) model.Date { return first.AddDays(i) },
			"backward": func(i int) model.Date { return first.AddDays(span - i) },
			"jumps":    func(int) model.Date { return first.AddDays(r.IntN(span)) },
			"near":     func(i int) model.Date { return first.AddDays(i - r.IntN(3)) },
		}
		for order, date := range orders {
			var days contract.Days
			for i := 0; i < span; i++ {
				k := model.BatchKey{Pipeline: "p.daily", BusinessDate: date(i), BatchID: "x"}
				got, gotOK := c.DuesWith(&days, k, never, time.Time{})
				want, wantOK := c.Dues(k, never, time.Time{})
				if got != want || gotOK != wantOK {
					t.Fatalf("%s %s %s: carried %v %v, fresh %v %v", name, order, k.BusinessDate, got, gotOK, want, wantOK)
				}
			}
		}
	}
}

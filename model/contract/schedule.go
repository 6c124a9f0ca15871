package contract

import (
	"slices"
	"sort"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// calendar returns the contract's schedule as a Cron, and false when the
// contract has none (or, for a contract built in code, its Schedule is not
// a valid expression).
func (c *Contract) calendar() (Cron, bool) {
	if c.cron != nil {
		return *c.cron, true
	}
	if c.Schedule == NoSchedule {
		return Cron{}, false
	}
	if cal, ok := namedCron(c.Schedule); ok {
		return cal, true
	}
	cal, err := ParseCron(string(c.Schedule))
	if err != nil {
		return Cron{}, false
	}
	return cal, true
}

// IsHoliday reports whether d is one of the contract's holidays.
func (c *Contract) IsHoliday(d model.Date) bool {
	i := sort.Search(len(c.Holidays), func(i int) bool { return c.Holidays[i].Compare(d) >= 0 })
	return i < len(c.Holidays) && c.Holidays[i] == d
}

// slotOf returns the time of day of key's firing. A schedule that fires in
// one hour (minute) of the day gives the hour (minute) itself; otherwise the
// batch id must name it through {hh} ({mi}) and name key's business date.
func (c *Contract) slotOf(key model.BatchKey) (hh, mi int, ok bool) {
	cal, ok := c.calendar()
	if !ok {
		return 0, 0, false
	}
	hh, okH := cal.singleHour()
	mi, okM := cal.singleMinute()
	if okH && okM {
		return hh, mi, true
	}
	if c.BatchID.IsZero() {
		return 0, 0, false
	}
	st, ok := c.BatchID.match(key.BatchID, key.Pipeline)
	if !ok || st.year != key.BusinessDate.Year || st.month != int(key.BusinessDate.Month) || st.day != key.BusinessDate.Day {
		return 0, 0, false
	}
	if !okH {
		if st.hour < 0 {
			return 0, 0, false
		}
		hh = st.hour
	}
	if !okM {
		if st.minute < 0 {
			return 0, 0, false
		}
		mi = st.minute
	}
	return hh, mi, true
}

// batchAt returns the key of the firing at hh:mi on date. Without a batch
// id template a schedule that fires once a day uses the compact date, the
// convention of the seed case; one that fires more often has no key.
func (c *Contract) batchAt(pipeline string, date model.Date, hh, mi int) (model.BatchKey, bool) {
	k := model.BatchKey{Pipeline: pipeline, BusinessDate: date}
	switch {
	case !c.BatchID.IsZero():
		k.BatchID = c.BatchID.renderAt(k, hh, mi)
	default:
		cal, _ := c.calendar()
		_, okH := cal.singleHour()
		_, okM := cal.singleMinute()
		if !okH || !okM {
			return model.BatchKey{}, false
		}
		k.BatchID = date.Compact()
	}
	return k, true
}

// MaxExpectedDays bounds the span Expected walks: a longer range is cut to
// this many days after from. Ten years of an every-minute schedule would be
// five million keys; callers page through long ranges instead.
const MaxExpectedDays = 366 * 10

// Expected returns the batches the schedule expects with business dates in
// [from, to] inclusive, in key order (BatchKey.Compare), holidays removed.
// It returns nil when the contract has no schedule or no batch_id template
// (then nothing says what the expected batches are called), and when to is
// before from. pipeline is c.Pipeline. A range over MaxExpectedDays days is
// cut to its first MaxExpectedDays days.
func (c *Contract) Expected(from, to model.Date) []model.BatchKey {
	cal, ok := c.calendar()
	if !ok || c.BatchID.IsZero() || to.Compare(from) < 0 {
		return nil
	}
	slots := cal.Slots()
	var out []model.BatchKey
	d := from
	for n := 0; d.Compare(to) <= 0 && n < MaxExpectedDays; n++ {
		if cal.FiresOn(d) && !c.IsHoliday(d) {
			first := len(out)
			for _, s := range slots {
				k, _ := c.batchAt(c.Pipeline, d, s/60, s%60)
				out = append(out, k)
			}
			// Ids are in time order for the usual templates; sort anyway,
			// since a template may put {mi} before {hh}.
			day := out[first:]
			sort.Slice(day, func(i, j int) bool { return day[i].BatchID < day[j].BatchID })
		}
		d = d.AddDays(1)
	}
	return out
}

// Previous returns the batch that precedes key under the schedule: the
// previous firing (daily: the day before; weekdays: the weekday before;
// hourly: the hour before, 23 of the previous date before 00; cron: the
// previous matching minute), skipping holidays. It reports false when the
// contract has no schedule (so continuity cannot be checked), or when the
// time of key's firing or the previous batch's id cannot be derived.
func (c *Contract) Previous(key model.BatchKey) (model.BatchKey, bool) {
	cal, ok := c.calendar()
	if !ok {
		return model.BatchKey{}, false
	}
	hh, mi, ok := c.slotOf(key)
	if !ok {
		return model.BatchKey{}, false
	}
	// Earlier today first, then day by day back: eight years reach a
	// February 29th schedule from any date.
	if cal.FiresOn(key.BusinessDate) && !c.IsHoliday(key.BusinessDate) {
		if s, ok := cal.lastBefore(hh*60 + mi); ok {
			return c.batchAt(key.Pipeline, key.BusinessDate, s/60, s%60)
		}
	}
	last, _ := cal.lastBefore(24 * 60)
	d := key.BusinessDate
	for n := 0; n < 8*366; n++ {
		d = d.AddDays(-1)
		if cal.FiresOn(d) && !c.IsHoliday(d) {
			return c.batchAt(key.Pipeline, d, last/60, last%60)
		}
	}
	return model.BatchKey{}, false
}

// Start returns when key's period starts: midnight of the business date in
// c.Location for daily and weekdays, hh:00 of it for hourly, the firing's
// hh:mi for a cron schedule. Times are wall-clock: where a daylight-saving
// change skips the time (02:30 on a spring-forward night), the batch starts
// when the clock jumps, the gap later (03:30); where the clock repeats it,
// at its first occurrence. It reports false for a contract with no schedule
// or when key's batch id does not tell the time.
func (c *Contract) Start(key model.BatchKey) (time.Time, bool) {
	hh, mi, ok := c.slotOf(key)
	if !ok {
		return time.Time{}, false
	}
	loc := c.Location
	if loc == nil {
		loc = time.UTC
	}
	return wallClock(key.BusinessDate, hh, mi, loc), true
}

// wallClock returns hh:mi on date d in loc (see WallClock).
func wallClock(d model.Date, hh, mi int, loc *time.Location) time.Time {
	return WallClock(d, time.Duration(hh)*time.Hour+time.Duration(mi)*time.Minute, loc)
}

// WallClock returns the instant at which the clock in loc reads tod after
// midnight (0 to 24h) on date d, by one rule in every zone, for batch
// starts and deadlines alike:
//
//   - a time that happens twice (01:30 when the clocks go back) is its first
//     occurrence, under the offset in force before the change;
//   - a time that never happens (02:30 when the clocks jump from 02:00 to
//     03:00) is taken under the offset before the change, so it falls the
//     gap later on the clock (03:30): when the clock jumps over it, as cron
//     runs it.
//
// time.Date leaves both cases unspecified (Go's choice differs between
// zones east and west of Greenwich), so the instant is worked out from the
// zone's offsets around the date.
func WallClock(d model.Date, tod time.Duration, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	naive := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Add(tod)
	if loc == time.UTC {
		return naive
	}
	// The offsets in force from a day before to a day after: a zone
	// changes its offset at most once in that span in practice, and the
	// candidates below are checked, not assumed.
	var offs [3]int
	for i, delta := range [...]time.Duration{-30 * time.Hour, 0, 30 * time.Hour} {
		_, offs[i] = naive.Add(delta).In(loc).Zone()
	}
	var best time.Time
	for i, off := range offs {
		if slices.Contains(offs[:i], off) {
			continue // the same candidate, checked already
		}
		t := naive.Add(-time.Duration(off) * time.Second)
		if _, o := t.In(loc).Zone(); o != off {
			continue
		}
		if best.IsZero() || t.Before(best) {
			best = t
		}
	}
	if !best.IsZero() {
		return best.In(loc)
	}
	// Skipped: the offset before the change is the smaller one (clocks
	// jump forward), which puts the time the gap later.
	lo := min(offs[0], offs[1], offs[2])
	return naive.Add(-time.Duration(lo) * time.Second).In(loc)
}

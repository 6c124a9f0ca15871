package contract

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// Cron is a parsed five-field cron expression: minute, hour, day of month,
// month, day of week, each a "*", a number, a range "a-b", a step "*/n" or
// "a-b/n", or a comma list of those; months and weekdays may be named (JAN,
// MON). Every wall-clock minute of the contract's zone that matches is one
// batch. Day of month and day of week follow Vixie cron: when both are
// restricted (neither starts with "*"), a day matches either.
//
// The named schedules are cron expressions too: daily is "0 0 * * *",
// weekdays "0 0 * * 1-5", hourly "0 * * * *". The zero Cron never fires.
type Cron struct {
	text    string
	minutes uint64 // bit m: minute m (0-59)
	hours   uint32 // bit h: hour h (0-23)
	doms    uint32 // bit d: day of month d (1-31)
	months  uint16 // bit m: month m (1-12)
	dows    uint8  // bit w: weekday w (0 = Sunday)
	// domStar and dowStar record a field that starts with "*": then the
	// day matches on both fields, otherwise on either (Vixie cron).
	domStar, dowStar bool
}

// cronField describes one of the five fields.
type cronField struct {
	name     string
	min, max int
	names    []string // names[i] is value min+i; nil when the field has none
}

var (
	monthNames   = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	weekdayNames = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

// cronFields returns the five fields in order. Day of week runs to 7 so
// that both 0 and 7 mean Sunday, as in every cron.
func cronFields() [5]cronField {
	return [5]cronField{
		{name: "minute", min: 0, max: 59},
		{name: "hour", min: 0, max: 23},
		{name: "day-of-month", min: 1, max: 31},
		{name: "month", min: 1, max: 12, names: monthNames},
		{name: "day-of-week", min: 0, max: 7, names: weekdayNames},
	}
}

// cronMacros are the @ shorthands of Vixie cron that fit a batch calendar
// (@reboot does not).
var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// ParseCron parses a five-field cron expression (see Cron). It rejects a
// sixth (seconds) field, since a batch calendar fires at most once a
// minute, and an expression that can never fire, such as "0 0 30 2 *".
func ParseCron(s string) (Cron, error) {
	text := strings.TrimSpace(s)
	expr := text
	if strings.HasPrefix(expr, "@") {
		m, ok := cronMacros[strings.ToLower(expr)]
		if !ok {
			return Cron{}, fmt.Errorf("cron %q: unknown shorthand (want @yearly, @monthly, @weekly, @daily or @hourly, or five fields)", s)
		}
		expr = m
	}
	fields := strings.Fields(expr)
	switch {
	case len(fields) == 6:
		return Cron{}, fmt.Errorf("cron %q: 6 fields: seconds are not supported, a schedule fires at most once a minute (want minute hour day-of-month month day-of-week)", s)
	case len(fields) != 5:
		return Cron{}, fmt.Errorf("cron %q: %d fields, want 5 (minute hour day-of-month month day-of-week)", s, len(fields))
	}
	c := Cron{text: text}
	var sets [5]uint64
	for i, f := range cronFields() {
		set, err := f.parse(fields[i])
		if err != nil {
			return Cron{}, fmt.Errorf("cron %q: %s field %q: %w", s, f.name, fields[i], err)
		}
		sets[i] = set
	}
	c.minutes = sets[0]
	c.hours = uint32(sets[1])
	c.doms = uint32(sets[2])
	c.months = uint16(sets[3])
	dows := sets[4]
	if dows&(1<<7) != 0 {
		dows |= 1 // 7 is Sunday too
	}
	c.dows = uint8(dows & 0x7f)
	c.domStar = strings.HasPrefix(fields[2], "*")
	c.dowStar = strings.HasPrefix(fields[4], "*")
	if !c.firesEver() {
		return Cron{}, fmt.Errorf("cron %q: never fires: no month has that day", s)
	}
	return c, nil
}

// parse turns one field into a bit set of its values.
func (f cronField) parse(s string) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			return 0, errors.New("empty list item")
		}
		rng, stepText, hasStep := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			hi = lo
			if isRange {
				if hi, err = f.value(b); err != nil {
					return 0, err
				}
				if hi < lo {
					return 0, fmt.Errorf("range %s runs backwards", rng)
				}
			} else if hasStep {
				return 0, fmt.Errorf("a step needs * or a range before it (write %s-%d/%s)", a, f.max, stepText)
			}
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.max-f.min+1 {
				return 0, fmt.Errorf("step %q: want a whole number from 1 to %d", stepText, f.max-f.min+1)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << uint(v)
		}
	}
	return set, nil
}

// value parses a number or a name of the field.
func (f cronField) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	n, ok := 0, s != "" && len(s) <= 2
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] >= '0' && s[i] <= '9'
		n = n*10 + int(s[i]-'0')
	}
	if !ok {
		if f.names != nil {
			return 0, fmt.Errorf("%q is not a number from %d to %d or a name (%s)", s, f.min, f.max, strings.Join(f.names, ", "))
		}
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, f.min, f.max)
	}
	if n < f.min || n > f.max {
		return 0, fmt.Errorf("%d out of range %d-%d", n, f.min, f.max)
	}
	return n, nil
}

// String returns the expression as written.
func (c Cron) String() string { return c.text }

// IsZero reports whether c is the zero Cron.
func (c Cron) IsZero() bool { return c.minutes == 0 }

// firesEver reports whether some date matches. Eight years from a leap
// year cover every month length and weekday, so a February 29th schedule
// counts.
func (c Cron) firesEver() bool {
	if c.minutes == 0 || c.hours == 0 {
		return false
	}
	d := model.Date{Year: 2024, Month: time.January, Day: 1}
	for i := 0; i < 8*366; i++ {
		if c.FiresOn(d) {
			return true
		}
		d = d.AddDays(1)
	}
	return false
}

// FiresOn reports whether c fires on date d (at any time of that day).
func (c Cron) FiresOn(d model.Date) bool {
	if c.months&(1<<uint(d.Month)) == 0 {
		return false
	}
	dom := c.doms&(1<<uint(d.Day)) != 0
	dow := c.dows&(1<<uint(weekday(d))) != 0
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

// weekday returns d's day of the week, 0 for Sunday.
func weekday(d model.Date) time.Weekday {
	return time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC).Weekday()
}

// Slots returns the times of day at which c fires, as minutes after
// midnight, ascending: hours times minutes.
func (c Cron) Slots() []int {
	out := make([]int, 0, bits.OnesCount32(c.hours)*bits.OnesCount64(c.minutes))
	for h := 0; h < 24; h++ {
		if c.hours&(1<<uint(h)) == 0 {
			continue
		}
		for m := 0; m < 60; m++ {
			if c.minutes&(1<<uint(m)) != 0 {
				out = append(out, h*60+m)
			}
		}
	}
	return out
}

// lastBefore returns the latest time of day (minutes after midnight) before
// now at which c fires, without building Slots: Previous runs for every
// batch of a replay.
func (c Cron) lastBefore(now int) (int, bool) {
	for h := min(now/60, 23); h >= 0; h-- {
		if c.hours&(1<<uint(h)) == 0 {
			continue
		}
		mins := c.minutes
		if h == now/60 {
			mins &= 1<<uint(now%60) - 1
		}
		if mins != 0 {
			return h*60 + 63 - bits.LeadingZeros64(mins), true
		}
	}
	return 0, false
}

// singleHour returns the hour when c fires in one hour of the day only.
func (c Cron) singleHour() (int, bool) {
	if bits.OnesCount32(c.hours) != 1 {
		return 0, false
	}
	return bits.TrailingZeros32(c.hours), true
}

// singleMinute returns the minute when c fires at one minute of the hour
// only.
func (c Cron) singleMinute() (int, bool) {
	if bits.OnesCount64(c.minutes) != 1 {
		return 0, false
	}
	return bits.TrailingZeros64(c.minutes), true
}

// namedCron returns the calendar of a named schedule. It builds the bit
// sets directly: Previous runs for every batch of a replay, and parsing
// checks that the expression can fire, which walks years of dates.
func namedCron(s Schedule) (Cron, bool) {
	const allDoms, allMonths, allDows = uint32(0xfffffffe), uint16(0x1ffe), uint8(0x7f)
	c := Cron{text: string(s), minutes: 1, hours: 1, doms: allDoms, months: allMonths, dows: allDows, domStar: true, dowStar: true}
	switch s {
	case Daily:
	case Weekdays:
		c.dows = 0x3e // Monday to Friday
	case Hourly:
		c.hours = 1<<24 - 1
	default:
		return Cron{}, false
	}
	return c, true
}

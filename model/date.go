package model

import (
	"errors"
	"time"
)

// Date is a calendar date without a time zone, as used for business dates.
// The zero Date means "no date" (heartbeats carry none).
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

var (
	errDateLayout = errors.New("want YYYY-MM-DD")
	errDateMonth  = errors.New("month out of range")
	errDateDay    = errors.New("day out of range")
)

// ParseDate parses a date in the form YYYY-MM-DD. Its errors say what is
// wrong with the date ("month out of range"), not which field held it.
func ParseDate(s string) (Date, error) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return Date{}, errDateLayout
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 {
		return Date{}, errDateLayout
	}
	if m < 1 || m > 12 {
		return Date{}, errDateMonth
	}
	if d < 1 || d > daysIn(y, time.Month(m)) {
		return Date{}, errDateDay
	}
	return Date{Year: y, Month: time.Month(m), Day: d}, nil
}

// MustParseDate is ParseDate for constants in tests and examples; it panics on
// a bad date.
func MustParseDate(s string) Date {
	d, err := ParseDate(s)
	if err != nil {
		panic("model: bad date " + s + ": " + err.Error())
	}
	return d
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// IsZero reports whether d is the zero Date ("no date").
func (d Date) IsZero() bool { return d == Date{} }

// String formats d as YYYY-MM-DD, or "" for the zero Date.
func (d Date) String() string {
	if d.IsZero() {
		return ""
	}
	return string(d.AppendFormat(make([]byte, 0, 10)))
}

// AppendFormat appends d as YYYY-MM-DD to b.
func (d Date) AppendFormat(b []byte) []byte {
	if y, m, dd := d.Year, int(d.Month), d.Day; y >= 0 && y <= 9999 && m >= 0 && m <= 99 && dd >= 0 && dd <= 99 {
		// The digits at once, as appendInt writes them: a replay names
		// every batch with its date.
		return append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
			byte('0'+m/10), byte('0'+m%10), '-', byte('0'+dd/10), byte('0'+dd%10))
	}
	b = appendInt(b, d.Year, 4)
	b = append(b, '-')
	b = appendInt(b, int(d.Month), 2)
	b = append(b, '-')
	return appendInt(b, d.Day, 2)
}

// Compact formats d as YYYYMMDD, the usual shape of a daily batch id.
func (d Date) Compact() string {
	b := make([]byte, 0, 8)
	b = appendInt(b, d.Year, 4)
	b = appendInt(b, int(d.Month), 2)
	return string(appendInt(b, d.Day, 2))
}

func appendInt(b []byte, v, width int) []byte {
	var tmp [20]byte
	i := len(tmp)
	neg := v < 0
	if neg {
		v = -v
	}
	for v > 0 || i == len(tmp) {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
	}
	for len(tmp)-i < width {
		i--
		tmp[i] = '0'
	}
	if neg {
		b = append(b, '-')
	}
	return append(b, tmp[i:]...)
}

// In returns midnight at the start of d in loc.
func (d Date) In(loc *time.Location) time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
}

// AddDays returns the date n days after d (before, for negative n).
func (d Date) AddDays(n int) Date {
	if day := d.Day + n; d.Year >= 1 && d.Year <= 9999 && d.Month >= time.January && d.Month <= time.December &&
		day >= 1 && day <= monthDays(d.Month, d.Year) {
		// Within the month, as time.Date would normalise it: a
		// deadline's day is mostly the business date's or the next.
		d.Day = day
		return d
	}
	t := time.Date(d.Year, d.Month, d.Day+n, 0, 0, 0, 0, time.UTC)
	return Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}
}

// monthDays is daysIn for a month from January to December, by rule
// rather than through time.Date.
func monthDays(m time.Month, y int) int {
	if m == time.February {
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	}
	// 31 for January, March, May, July, August, October and December.
	return 30 + int((m+m/8)%2)
}

// Compare returns -1, 0 or +1 as d is before, equal to or after o.
func (d Date) Compare(o Date) int {
	switch {
	case d.Year != o.Year:
		return sign(d.Year - o.Year)
	case d.Month != o.Month:
		return sign(int(d.Month) - int(o.Month))
	default:
		return sign(d.Day - o.Day)
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// DaysSinceEpoch returns the number of days from 1970-01-01 to d (negative
// before), the representation of ClickHouse's Date type. A day past its
// month's end carries into the next month, as time.Date counts it. The
// decoder and the learned expectations ask for every event and boundary,
// so the days are counted here rather than by time.Date.
func (d Date) DaysSinceEpoch() int {
	if d.Month < time.January || d.Month > time.December {
		return int(d.In(time.UTC).Unix() / 86400) // time.Date carries the month too
	}
	// Days from the civil date (proleptic Gregorian), the year starting in
	// March so that a leap day ends it.
	y, m := d.Year, int(d.Month)
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d.Day - 1
	return era*146097 + yoe*365 + yoe/4 - yoe/100 + doy - 719468
}

// DateFromDays is the inverse of Date.DaysSinceEpoch.
func DateFromDays(days int) Date {
	t := time.Unix(int64(days)*86400, 0).UTC()
	return Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}
}

package model

import (
	"fmt"
	"time"
)

// ParseTime parses an RFC 3339 time (UTC or with an offset) and returns it in
// UTC, truncated to the millisecond, the precision handoff keeps everywhere.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339, like 2026-10-01T01:20:05.120Z")
	}
	t = t.UTC().Truncate(time.Millisecond)
	// An offset can carry a time past the four-digit years RFC 3339 can
	// write, and handoff writes every time back in UTC.
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, fmt.Errorf("year %d in UTC is outside 0000-9999", y)
	}
	return t, nil
}

// TimeLayout is how handoff writes times: RFC 3339 in UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendTime appends t in TimeLayout (RFC 3339, UTC, exactly three
// fractional digits), the one way handoff writes a time. It computes the
// civil date from Unix milliseconds (Howard Hinnant's algorithm) instead
// of going through time.Time.AppendFormat, which showed in profiles.
func AppendTime(b []byte, t time.Time) []byte {
	unixMs := t.UnixMilli()
	days := unixMs / 86400000
	rem := unixMs % 86400000
	if rem < 0 {
		rem += 86400000
		days--
	}
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := int(doy - (153*mp+2)/5 + 1)
	mo := int(mp + 3)
	if mo > 12 {
		mo -= 12
	}
	y := int(yoe + era*400)
	if mo <= 2 {
		y++
	}
	ms := int(rem % 1000)
	sec := int(rem / 1000)
	h, mi, s := sec/3600, sec/60%60, sec%60
	return append(b, byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// FormatTime returns t in TimeLayout, as AppendTime writes it: the string
// form for JSON fields and logs.
func FormatTime(t time.Time) string { return string(AppendTime(make([]byte, 0, 24), t)) }

// HumanTime writes t for people: the date and time in UTC and, when loc is
// a zone other than UTC, the wall clock there with the zone's name and a
// note when its date is not the UTC date:
//
//	2026-09-30 22:00 UTC (06:00 Asia/Shanghai, next day)
//	2026-10-01 01:20:05.120 UTC (21:20:05.120 America/New_York, previous day)
//
// The precision is the time's own: minutes when it falls on a whole
// minute (deadlines do), seconds when on a whole second, milliseconds
// otherwise, so nothing is rounded away. A nil loc shows UTC alone, as does
// time.UTC. The local part is written in the same precision.
func HumanTime(t time.Time, loc *time.Location) string {
	t = t.UTC()
	clock := "15:04"
	switch {
	case t.Nanosecond() != 0:
		clock = "15:04:05.000"
	case t.Second() != 0:
		clock = "15:04:05"
	}
	b := make([]byte, 0, 64)
	b = t.AppendFormat(b, "2006-01-02 "+clock)
	b = append(b, " UTC"...)
	if loc == nil || loc == time.UTC || loc.String() == "UTC" {
		return string(b)
	}
	lt := t.In(loc)
	b = append(b, " ("...)
	b = lt.AppendFormat(b, clock)
	b = append(b, ' ')
	b = append(b, zoneName(lt, loc)...)
	uy, um, ud := t.Date()
	ly, lm, ld := lt.Date()
	switch u, l := uy*10000+int(um)*100+ud, ly*10000+int(lm)*100+ld; {
	case l > u:
		b = append(b, ", next day"...)
	case l < u:
		b = append(b, ", previous day"...)
	}
	return string(append(b, ')'))
}

// zoneName names loc for a reader: its IANA name, or for the process's own
// zone (whose name is just "Local") the abbreviation in force at t, or the
// offset where the zone has no abbreviation.
func zoneName(lt time.Time, loc *time.Location) string {
	if name := loc.String(); name != "Local" && name != "" {
		return name
	}
	abbr, _ := lt.Zone()
	if abbr != "" && abbr[0] != '+' && abbr[0] != '-' {
		return abbr
	}
	return "UTC" + lt.Format("-07:00")
}

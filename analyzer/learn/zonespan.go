package learn

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/handoff-dev/handoff/model"
)

const secondsPerDay = 86400

// civilDays is the number of days from 1970-01-01 to d (negative before),
// as time.Date counts them: a day past the month's end carries into the
// next month.
func civilDays(d model.Date) int64 {
	// Days from civil (proleptic Gregorian), with March first so that a
	// leap day ends the year.
	y, m := int64(d.Year), int64(d.Month)
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + int64(d.Day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// zoneSpan is one period of a zone's offset: from start to end (Unix
// seconds, end excluded), offset seconds east of UTC.
type zoneSpan struct {
	offset, start, end int64
}

// spanAt returns the period of loc's offset that holds unix, as
// time.Location's own lookup finds it.
func spanAt(loc *time.Location, unix int64) *zoneSpan {
	t := time.Unix(unix, 0).In(loc)
	_, off := t.Zone()
	from, to := t.ZoneBounds()
	sp := &zoneSpan{offset: int64(off), start: math.MinInt64, end: math.MaxInt64}
	if !from.IsZero() {
		sp.start = from.Unix()
	}
	if !to.IsZero() {
		sp.end = to.Unix()
	}
	return sp
}

// spanCache remembers the last offset period of one zone that a lookup
// fell in. A period read is a period of the zone whichever goroutine
// stored it, so concurrent use is safe and every answer exact.
type spanCache struct {
	last atomic.Pointer[zoneSpan]
}

// lookup returns the period of loc's offset that holds unix.
func (c *spanCache) lookup(loc *time.Location, unix int64) *zoneSpan {
	if sp := c.last.Load(); sp != nil && sp.start <= unix && unix < sp.end {
		return sp
	}
	sp := spanAt(loc, unix)
	c.last.Store(sp)
	return sp
}

// date returns the Unix time of wall, the seconds of a wall clock in loc
// counted as if it were UTC, the way time.Date resolves it: the offset
// of the period wall falls in when taken as UTC, unless wall less that
// offset falls outside the period, then the offset in force at that
// instant (so a time in a gap or an overlap resolves as time.Date does).
func (c *spanCache) date(loc *time.Location, wall int64) int64 {
	sp := c.lookup(loc, wall)
	off := sp.offset
	if off == 0 {
		return wall
	}
	if utc := wall - off; utc < sp.start || utc >= sp.end {
		off = c.lookup(loc, utc).offset
	}
	return wall - off
}

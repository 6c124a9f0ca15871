package learn

import (
	"math"
	"sync/atomic"
	"time"
)

const secondsPerDay = 86400

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

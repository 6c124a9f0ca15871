package learn

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// The deadline rule (docs/learned.md): arrivals far later than the rest
// (beyond the fence, the 75th percentile plus fenceIQRs times the
// interquartile range, at least fenceMin) are late days, not the
// pipeline's habit, and are left out; the deadline is then the 95th
// percentile of the remaining arrivals plus a margin of the larger of
// marginMin and the distance from the median to that 95th percentile,
// rounded up to roundTo.
const (
	fenceIQRs = 1.5
	fenceMin  = 10 * time.Minute
	marginMin = 30 * time.Minute
	roundTo   = 5 * time.Minute
)

// zoneTie is how close two zones' regularity must be to count as equal:
// then the earlier candidate wins. Firings within the day compare their
// start offsets among zones within timedTie: the hours a daylight-saving
// night repeats or skips differ a little from zone to zone.
const (
	zoneTie  = 0.01 // minutes
	timedTie = 1.0  // minutes
)

// arrival is when a batch's boundary was proven, as an offset from the
// batch's anchor: for a batch of a once-a-day schedule the midnight that
// starts its business date, on the zone's wall clock (days × 1440 plus
// the time of day, so a deadline "business_date + 1d 06:00" is the same
// offset in summer and winter); for a firing within the day, the minutes
// after its start.
type arrival struct {
	minutes float64
	date    model.Date
}

// offset returns the arrival offset of the instant ms for batch k of slot
// under loc.
func offset(ms int64, k model.BatchKey, slot int, timed bool, loc *time.Location) float64 {
	t := time.UnixMilli(ms).In(loc)
	if timed {
		return t.Sub(wallClock(k.BusinessDate, slot/60, slot%60, loc)).Minutes()
	}
	local := model.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}
	days := local.DaysSinceEpoch() - k.BusinessDate.DaysSinceEpoch()
	return float64(days*1440) + float64(t.Hour()*60+t.Minute()) + float64(t.Second())/60 + float64(t.Nanosecond())/6e10
}

// wallClock is hh:mi of d in loc by the contracts' one rule for daylight-
// saving changes, so that a learned arrival and a contract's deadline name
// the same instant.
func wallClock(d model.Date, hh, mi int, loc *time.Location) time.Time {
	return contract.WallClock(d, time.Duration(hh)*time.Hour+time.Duration(mi)*time.Minute, loc)
}

// quantile returns the q-quantile of sorted values (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// spread is how irregular a set of offsets is: the mean absolute
// deviation from the median, in minutes. A zone whose daylight-saving
// changes the jobs follow makes it smaller by the hour they would seem to
// jump in any other zone.
func spread(v []float64) (dev, median float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	median = quantile(s, 0.5)
	for _, x := range s {
		dev += math.Abs(x - median)
	}
	return dev / float64(len(s)), median
}

// zoneFit is how regular a pipeline's arrivals are in one zone.
type zoneFit struct {
	loc         *time.Location
	dev, median float64
}

// chooseZone returns the zone that makes the first arrivals of the batches
// most regular. Zones a fixed offset apart are equally regular; then a
// schedule within the day takes the one whose batches start closest
// before they arrive (the offset its ids' hours are written in), and a
// once-a-day schedule the earliest candidate.
func chooseZone(first []batchAt, timed bool, zones []*time.Location) (best zoneFit, fits []zoneFit) {
	for _, loc := range zones {
		v := make([]float64, len(first))
		for i, f := range first {
			v[i] = offset(f.ms, f.key, f.slot, timed, loc)
		}
		dev, med := spread(v)
		fits = append(fits, zoneFit{loc: loc, dev: dev, median: med})
	}
	best = fits[0]
	for _, f := range fits[1:] {
		if f.dev < best.dev-zoneTie {
			best = f
		}
	}
	if timed {
		lowest := best.dev
		for _, f := range fits {
			if f.dev <= lowest+timedTie && f.median >= 0 && (best.median < 0 || f.median < best.median) {
				best = f
			}
		}
	}
	return best, fits
}

// batchAt is one batch's proof time of a boundary, with its slot.
type batchAt struct {
	key  model.BatchKey
	slot int
	ms   int64
}

// deadlineLearned is the deadline of one boundary and its evidence.
type deadlineLearned struct {
	boundary      model.Boundary
	text          string
	n             int          // arrivals used
	late          []model.Date // arrivals beyond the fence, left out
	p50, p95, due float64      // offsets in minutes
	ok            bool
	why           string
}

// learnDeadline applies the deadline rule to a boundary's arrivals.
func learnDeadline(b model.Boundary, arr []arrival, timed bool, minN int) deadlineLearned {
	dl := deadlineLearned{boundary: b}
	sort.Slice(arr, func(i, j int) bool { return arr[i].minutes < arr[j].minutes })
	v := make([]float64, len(arr))
	for i, a := range arr {
		v[i] = a.minutes
	}
	if len(v) < minN {
		dl.why = fmt.Sprintf("%d arrivals: too few (need %d)", len(v), minN)
		return dl
	}
	q25, q75 := quantile(v, 0.25), quantile(v, 0.75)
	fence := q75 + fenceIQRs*math.Max(q75-q25, fenceMin.Minutes())
	kept := v[:0:0]
	for i, x := range v {
		if x > fence {
			dl.late = append(dl.late, arr[i].date)
			continue
		}
		kept = append(kept, x)
	}
	sort.Slice(dl.late, func(i, j int) bool { return dl.late[i].Compare(dl.late[j]) < 0 })
	dl.n = len(kept)
	dl.p50, dl.p95 = quantile(kept, 0.5), quantile(kept, 0.95)
	margin := math.Max(marginMin.Minutes(), dl.p95-dl.p50)
	step := roundTo.Minutes()
	dl.due = math.Ceil((dl.p95+margin)/step) * step
	if timed {
		if dl.due <= 0 {
			dl.why = "arrives before its batch starts"
			return dl
		}
		dl.text = "start + " + durText(int(dl.due))
	} else {
		if dl.due < 0 {
			dl.why = "arrives before its business date begins: no business_date deadline can say so"
			return dl
		}
		dl.text = absText(int(dl.due))
	}
	dl.ok = true
	return dl
}

// absText writes an offset from the business date's midnight as a
// contract's absolute deadline.
func absText(m int) string {
	days, tod := m/1440, m%1440
	if days == 0 {
		return fmt.Sprintf("business_date %02d:%02d", tod/60, tod%60)
	}
	return fmt.Sprintf("business_date + %dd %02d:%02d", days, tod/60, tod%60)
}

// offText writes an offset for a comment, in the form of its deadline.
func offText(m float64, timed bool) string {
	if timed {
		return durText(int(math.Round(m)))
	}
	mm := int(math.Floor(m))
	if mm < 0 {
		return fmt.Sprintf("%dm before the business date", -mm)
	}
	days, tod := mm/1440, mm%1440
	return fmt.Sprintf("+%dd %02d:%02d", days, tod/60, tod%60)
}

// durText writes minutes as a Go duration: 95 as "1h35m".
func durText(m int) string {
	switch {
	case m < 0:
		return "-" + durText(-m)
	case m < 60:
		return fmt.Sprintf("%dm", m)
	case m%60 == 0:
		return fmt.Sprintf("%dh", m/60)
	}
	return fmt.Sprintf("%dh%dm", m/60, m%60)
}

package learn

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// presentShare is the share of a weekday's dates (or of the dates a
// firing time could appear on) that must have a batch for the schedule to
// include it: below it, batches on that weekday are exceptions.
const presentShare = 0.5

// schedLearned is the schedule learned from a pipeline's batches.
type schedLearned struct {
	expr string // "daily", "weekdays", "hourly" or a cron expression
	// days[w]: the schedule fires on weekday w; slots: its times of day,
	// minutes after midnight, ascending.
	days  [7]bool
	slots []int
	// present: business dates with at least one batch; first, last: the
	// range the history spans.
	present     map[model.Date]bool
	first, last model.Date
	// dayStats[w] is how many of weekday w's dates had a batch, of how many.
	dayStats [7][2]int
	// offDays are dates with a batch the schedule does not expect.
	offDays []model.Date
	// gaps are dates the schedule expects with no batch at all.
	gaps []model.Date
}

// fires reports whether the schedule fires on d.
func (s *schedLearned) fires(d model.Date) bool { return s.days[weekdayOf(d)] }

func weekdayOf(d model.Date) time.Weekday {
	return time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC).Weekday()
}

// learnSchedule derives the days and times a pipeline's batches fire:
// weekdays that have a batch on most of their dates, and the times of day
// (from the ids, under t) that appear on most of the dates with a batch.
func learnSchedule(batches []*batch, t idTemplate, timed bool) schedLearned {
	s := schedLearned{present: map[model.Date]bool{}}
	slotDates := map[int]map[model.Date]bool{}
	for _, b := range batches {
		d := b.key.BusinessDate
		s.present[d] = true
		if s.first.IsZero() || d.Compare(s.first) < 0 {
			s.first = d
		}
		if s.last.IsZero() || d.Compare(s.last) > 0 {
			s.last = d
		}
		slot := 0
		if timed {
			var ok bool
			if slot, ok = t.slot(b.key); !ok {
				continue
			}
		}
		if slotDates[slot] == nil {
			slotDates[slot] = map[model.Date]bool{}
		}
		slotDates[slot][d] = true
	}
	for d := s.first; d.Compare(s.last) <= 0; d = d.AddDays(1) {
		w := weekdayOf(d)
		s.dayStats[w][1]++
		if s.present[d] {
			s.dayStats[w][0]++
		}
	}
	for w := range 7 {
		st := s.dayStats[w]
		s.days[w] = st[1] > 0 && float64(st[0]) >= presentShare*float64(st[1])
	}
	for slot, dates := range slotDates {
		if float64(len(dates)) >= presentShare*float64(len(s.present)) {
			s.slots = append(s.slots, slot)
		}
	}
	sort.Ints(s.slots)
	for d := s.first; d.Compare(s.last) <= 0; d = d.AddDays(1) {
		switch {
		case s.present[d] && !s.fires(d):
			s.offDays = append(s.offDays, d)
		case !s.present[d] && s.fires(d):
			s.gaps = append(s.gaps, d)
		}
	}
	s.expr = cronText(s.days, s.slots, timed)
	return s
}

// cronText writes the schedule by its name where it has one, else as a
// five-field cron expression.
func cronText(days [7]bool, slots []int, timed bool) string {
	all, week := true, true
	for w := range 7 {
		all = all && days[w]
		wd := w >= 1 && w <= 5
		week = week && days[w] == wd
	}
	if !timed {
		switch {
		case all:
			return "daily"
		case week:
			return "weekdays"
		}
		return "0 0 * * " + dowField(days)
	}
	minutes, hours := map[int]bool{}, map[int]bool{}
	for _, s := range slots {
		minutes[s%60], hours[s/60] = true, true
	}
	// A cron expression is minutes × hours: the slots must be that product.
	if len(minutes)*len(hours) != len(slots) {
		return ""
	}
	if all && len(hours) == 24 && len(minutes) == 1 && minutes[0] {
		return "hourly"
	}
	dow := "*"
	if !all {
		dow = dowField(days)
	}
	return listField(minutes, 60) + " " + listField(hours, 24) + " * * " + dow
}

// listField writes a cron field as "*", a range or a list.
func listField(set map[int]bool, n int) string {
	if len(set) == n {
		return "*"
	}
	var vals []int
	for v := range set {
		vals = append(vals, v)
	}
	sort.Ints(vals)
	if len(vals) > 2 {
		// An even step from the first value: "0 */6" reads better as a list
		// than as a step only when the list is short.
		step := vals[1] - vals[0]
		even := step > 1 && vals[0] < step
		for i := 1; i < len(vals) && even; i++ {
			even = vals[i]-vals[i-1] == step
		}
		if even && vals[len(vals)-1]+step >= n {
			if vals[0] == 0 {
				return "*/" + strconv.Itoa(step)
			}
			return fmt.Sprintf("%d-%d/%d", vals[0], n-1, step)
		}
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// dowField writes the days of week as cron does: ranges where days run on.
func dowField(days [7]bool) string {
	var parts []string
	for w := 0; w < 7; {
		if !days[w] {
			w++
			continue
		}
		e := w
		for e+1 < 7 && days[e+1] {
			e++
		}
		switch {
		case e == w:
			parts = append(parts, strconv.Itoa(w))
		case e == w+1:
			parts = append(parts, strconv.Itoa(w), strconv.Itoa(e))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", w, e))
		}
		w = e + 1
	}
	return strings.Join(parts, ",")
}

// slotText writes a slot as HH:MM.
func slotText(s int) string { return fmt.Sprintf("%02d:%02d", s/60, s%60) }

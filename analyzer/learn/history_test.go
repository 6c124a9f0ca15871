package learn

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// truth is the contract a generated pipeline really follows, known to the
// test and hidden from the learner, and what its arrivals really were.
type truth struct {
	kind     string
	yaml     string
	c        *contract.Contract
	required model.BoundarySet
	zone     *time.Location
	timed    bool
	// normal[b] are the offsets (minutes from the batch's anchor in the
	// true zone) of boundary b on days without a late delivery or a
	// re-run: the true arrival distribution of an undisturbed day.
	normal [model.Consumed + 1][]float64
	// keys are the batches that arrived normally.
	keys []model.BatchKey
}

// A pipeline's shape, by index: the schedule and its batch ids.
var kinds = []struct {
	name, schedule, batchID string
	slots                   []int // times of day (minutes); nil: once at midnight
	days                    []time.Weekday
}{
	{"daily", "daily", "{yyyymmdd}", nil, nil},
	{"weekdays", "weekdays", "{business_date}", nil, []time.Weekday{1, 2, 3, 4, 5}},
	{"hourly", "hourly", "{yyyymmdd}{hh}", every(0, 60), nil},
	{"cron-days", "0 0 * * 1-6", "b{yyyymmdd}", nil, []time.Weekday{1, 2, 3, 4, 5, 6}},
	{"cron-6h", "0 */6 * * *", "{yyyymmdd}{hh}", every(0, 360), nil},
	{"cron-4h-wd", "30 8,12,16,20 * * 1-5", "{yyyymmdd}{hh}{mi}", []int{8*60 + 30, 12*60 + 30, 16*60 + 30, 20*60 + 30}, []time.Weekday{1, 2, 3, 4, 5}},
}

func every(first, step int) []int {
	var out []int
	for m := first; m < 24*60; m += step {
		out = append(out, m)
	}
	return out
}

var zoneNames = []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Shanghai", "Australia/Sydney", "Asia/Kolkata"}

// Holiday calendars shared by a quarter of the pipelines each (the first
// quarter has none).
var calendars = [][]string{
	nil,
	{"2026-10-01", "2026-10-02", "2026-10-07"},
	{"2026-10-12", "2026-11-11", "2026-11-26"},
	{"2026-10-26", "2026-11-03"},
}

var requiredSets = [][]model.Boundary{
	model.Ladder[:],
	{model.Produced, model.Finalized, model.Transferred, model.Identified, model.Consumed},
	{model.Transferred, model.SignalDelivered, model.Identified, model.Consumed},
}

var (
	histFirst = model.MustParseDate("2026-09-01")
	histLast  = model.MustParseDate("2026-11-29") // 90 days
)

// generate writes a history of n pipelines over 90 days to fn and returns
// their true contracts: several schedules, zones with and without
// daylight saving, holiday calendars, noise (heartbeats, duplicates,
// staged files, misnamed transfers), late days, failures, re-runs and
// batches that never came.
func generate(t testing.TB, n int, seed uint64, fn func(*model.Event)) []*truth {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var truths []*truth
	for i := range n {
		k := kinds[i%len(kinds)]
		loc, err := time.LoadLocation(zoneNames[(i/len(kinds))%len(zoneNames)])
		if err != nil {
			t.Fatal(err)
		}
		tr := &truth{kind: k.name, zone: loc, timed: k.slots != nil}
		name := fmt.Sprintf("pl-%03d.%s", i, k.name)
		req := requiredSets[(i/3)%len(requiredSets)]
		for _, b := range req {
			tr.required = tr.required.With(b)
		}
		art := []string{fmt.Sprintf("p%03d_{batch_id}.csv", i), "{pipeline}_{batch_id}.parquet", fmt.Sprintf("export_%d_{yyyymmdd}_{batch_id}.csv", i)}[(i/2)%3]
		sig := []string{fmt.Sprintf("p%03d_{batch_id}.flag", i), "_SUCCESS_{batch_id}", "{pipeline}_{batch_id}.done"}[(i/5)%3]
		hasSig := tr.required.Has(model.Signaled) || tr.required.Has(model.SignalDelivered)
		fires := func(d model.Date) bool {
			if k.days == nil {
				return true
			}
			for _, w := range k.days {
				if weekdayOf(d) == w {
					return true
				}
			}
			return false
		}
		var hol []string
		holSet := map[model.Date]bool{}
		for _, h := range calendars[i%len(calendars)] {
			if d := model.MustParseDate(h); fires(d) {
				hol = append(hol, h)
				holSet[d] = true
			}
		}
		var y strings.Builder
		fmt.Fprintf(&y, "pipeline: %s\nschedule: %q\ntimezone: %s\nbatch_id: %q\nartifact: %q\n", name, k.schedule, loc, k.batchID, art)
		if hasSig {
			fmt.Fprintf(&y, "signal: %q\n", sig)
		}
		if len(hol) > 0 {
			fmt.Fprintf(&y, "holidays: [%s]\n", strings.Join(hol, ", "))
		}
		var names []string
		for _, b := range req {
			names = append(names, b.String())
		}
		fmt.Fprintf(&y, "required: [%s]\n", strings.Join(names, ", "))
		tr.yaml = y.String()
		tr.c, err = contract.Parse(name+".yaml", []byte(tr.yaml))
		if err != nil {
			t.Fatalf("true contract of %s: %v\n%s", name, err, tr.yaml)
		}
		base := float64(60 + 30*(i%9)) // minutes after the anchor
		for d := histFirst; d.Compare(histLast) <= 0; d = d.AddDays(1) {
			if !fires(d) || holSet[d] {
				continue
			}
			slots := k.slots
			if slots == nil {
				slots = []int{0}
			}
			for _, s := range slots {
				key := model.BatchKey{Pipeline: name, BusinessDate: d}
				key.BatchID = renderID(k.batchID, d, s)
				genBatch(r, tr, key, s, base, art, sig, req, fn)
			}
		}
		truths = append(truths, tr)
	}
	return truths
}

// renderID renders the test's batch id templates.
func renderID(tmpl string, d model.Date, slot int) string {
	return strings.NewReplacer("{yyyymmdd}", d.Compact(), "{business_date}", d.String(),
		"{hh}", fmt.Sprintf("%02d", slot/60), "{mi}", fmt.Sprintf("%02d", slot%60)).Replace(tmpl)
}

func renderName(tmpl string, k model.BatchKey) string {
	return strings.NewReplacer("{batch_id}", k.BatchID, "{pipeline}", k.Pipeline, "{yyyymmdd}", k.BusinessDate.Compact()).Replace(tmpl)
}

// genBatch sends one batch's events.
func genBatch(r *rand.Rand, tr *truth, key model.BatchKey, slot int, base float64, art, sig string, req []model.Boundary, fn func(*model.Event)) {
	x := r.Float64()
	if x < 0.01 { // never came
		return
	}
	// The anchor: the business date's midnight (the day after it, for a
	// once-a-day batch, which runs the next night) or the firing's start.
	var anchor func(min float64) time.Time
	if tr.timed {
		start := wallClock(key.BusinessDate, slot/60, slot%60, tr.zone)
		base = 5
		anchor = func(m float64) time.Time { return start.Add(time.Duration(m * float64(time.Minute))) }
	} else {
		d := key.BusinessDate
		anchor = func(m float64) time.Time {
			whole := int(m)
			frac := time.Duration((m - float64(whole)) * float64(time.Minute))
			return time.Date(d.Year, d.Month, d.Day, 0, whole, 0, 0, tr.zone).Add(frac)
		}
		base += 1440
	}
	noise := 40.0
	step := 6.0
	if tr.timed {
		noise, step = 20, 3
	}
	at := base + r.Float64()*noise
	late, shift := false, 0.0
	switch {
	case x < 0.035: // a late day: hours behind from the transfer on
		late, shift = true, 120+r.Float64()*360
	case x < 0.05: // a re-run: the first attempt failed
		late, shift = true, 30+r.Float64()*30
	}
	failed := x >= 0.05 && x < 0.07
	seq := 0
	send := func(typ model.EventType, object string, m float64, attempt int64) {
		seq++
		e := &model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%02d", key, seq), Type: typ, Time: anchor(m).UTC().Truncate(time.Millisecond),
			Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: key.BatchID, Component: "c", Object: object}
		switch typ {
		case model.ArtifactFinalized, model.ConsumeSucceeded:
			e.Rows, e.HasRows = 1000, true
		}
		if attempt > 0 {
			e.Attempt, e.HasAttempt = attempt, true
		}
		fn(e)
		if r.Float64() < 0.05 { // a redelivery
			fn(e)
		}
	}
	artName, sigName := renderName(art, key), renderName(sig, key)
	producerSide := req[0] == model.Produced
	if producerSide {
		send(model.JobStarted, "", at-3, 1)
		send(model.ArtifactStaged, artName+".tmp", at-2, 0)
		if failed || shift > 0 && shift < 60 {
			send(model.JobFailed, "", at-1, 1)
			if failed {
				return
			}
			send(model.JobStarted, "", at-1+shift/2, 2)
		}
	}
	if r.Float64() < 0.1 {
		send(model.ProcessHeartbeat, "", at, 0)
	}
	var offs [model.Consumed + 1]float64
	for _, b := range req {
		m := at
		if late && (shift < 60 || b >= model.Transferred) {
			m += shift
		}
		offs[b] = m
		obj := ""
		var typ model.EventType
		switch b {
		case model.Produced:
			typ = model.JobSucceeded
		case model.Finalized:
			typ, obj = model.ArtifactFinalized, artName
		case model.Signaled:
			typ, obj = model.SignalPublished, sigName
		case model.Transferred:
			typ, obj = model.ArtifactTransferred, artName
			if r.Float64() < 0.005 {
				obj = "wrong_" + artName
			}
		case model.SignalDelivered:
			typ, obj = model.SignalTransferred, sigName
		case model.Identified:
			typ, obj = model.BatchIdentified, artName
		case model.Consumed:
			if failed {
				send(model.ConsumeFailed, "", m, 1)
				return
			}
			typ = model.ConsumeSucceeded
		}
		send(typ, obj, m, 0)
		at += 1 + r.Float64()*step
	}
	if !late && !failed {
		for _, b := range req {
			tr.normal[b] = append(tr.normal[b], offs[b])
		}
		tr.keys = append(tr.keys, key)
	}
}

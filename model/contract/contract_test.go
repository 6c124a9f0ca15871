package contract_test

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func provenAt(m map[model.Boundary]time.Time) contract.ProvenAt {
	return func(b model.Boundary) (time.Time, bool) {
		t, ok := m[b]
		return t, ok
	}
}

func TestDue(t *testing.T) {
	shanghai := mustLocation(t, "Asia/Shanghai")
	london := mustLocation(t, "Europe/London")
	abs := func(days int, tod time.Duration) contract.Deadline {
		return contract.Deadline{Kind: contract.Absolute, Days: days, TimeOfDay: tod}
	}
	rel := func(d time.Duration) contract.Deadline { return contract.Deadline{Kind: contract.Relative, After: d} }
	mk := func(loc *time.Location, required model.BoundarySet, dl map[model.Boundary]contract.Deadline) *contract.Contract {
		c := contract.Default("p")
		c.Location = loc
		c.Required = required
		for b, d := range dl {
			c.Deadlines[b] = d
		}
		return c
	}
	all := model.AllBoundaries
	onlyEnds := model.BoundarySet(0).With(model.Produced).With(model.Consumed)
	latest := utc("2026-10-01T01:20:05Z")
	tests := []struct {
		name   string
		c      *contract.Contract
		b      model.Boundary
		date   string
		proven map[model.Boundary]time.Time
		latest time.Time
		want   time.Time // zero: no deadline yet
	}{
		{"absolute in Asia/Shanghai", mk(shanghai, all, map[model.Boundary]contract.Deadline{model.SignalDelivered: abs(1, 6*time.Hour)}),
			model.SignalDelivered, "2026-09-30", nil, latest, utc("2026-09-30T22:00:00Z")},
		{"absolute in UTC", mk(nil, all, map[model.Boundary]contract.Deadline{model.Produced: abs(2, 7*time.Hour+30*time.Minute)}),
			model.Produced, "2026-09-30", nil, time.Time{}, utc("2026-10-02T07:30:00Z")},
		{"absolute ignores proof of the previous boundary", mk(shanghai, all, map[model.Boundary]contract.Deadline{model.Transferred: abs(1, 4*time.Hour)}),
			model.Transferred, "2026-09-30", map[model.Boundary]time.Time{model.Signaled: utc("2026-10-05T00:00:00Z")}, latest, utc("2026-09-30T20:00:00Z")},
		{"absolute on a daylight-saving day is wall-clock time", mk(london, all, map[model.Boundary]contract.Deadline{model.Produced: abs(1, 6*time.Hour)}),
			model.Produced, "2026-03-28", nil, latest, utc("2026-03-29T05:00:00Z")},
		{"relative to a proven previous boundary", mk(shanghai, all, map[model.Boundary]contract.Deadline{
			model.Produced: abs(1, 2*time.Hour), model.Finalized: rel(30 * time.Minute)}),
			model.Finalized, "2026-09-30", map[model.Boundary]time.Time{model.Produced: utc("2026-09-30T17:14:05Z")}, latest, utc("2026-09-30T17:44:05Z")},
		{"relative to an unproven previous boundary chains its deadline", mk(shanghai, all, map[model.Boundary]contract.Deadline{
			model.Produced: abs(1, 2*time.Hour), model.Finalized: rel(30 * time.Minute), model.Signaled: rel(15 * time.Minute)}),
			model.Signaled, "2026-09-30", nil, latest, utc("2026-09-30T18:45:00Z")},
		{"relative chain stops at the first proven boundary", mk(shanghai, all, map[model.Boundary]contract.Deadline{
			model.Produced: abs(1, 2*time.Hour), model.Finalized: rel(30 * time.Minute), model.Signaled: rel(15 * time.Minute)}),
			model.Signaled, "2026-09-30", map[model.Boundary]time.Time{model.Produced: utc("2026-09-30T17:00:00Z")}, latest, utc("2026-09-30T17:45:00Z")},
		{"relative to a previous boundary under the default rule", mk(nil, all, map[model.Boundary]contract.Deadline{model.Finalized: rel(time.Hour)}),
			model.Finalized, "2026-09-30", nil, latest, latest.Add(25 * time.Hour)},
		{"relative to a default-rule boundary with no events", mk(nil, all, map[model.Boundary]contract.Deadline{model.Finalized: rel(time.Hour)}),
			model.Finalized, "2026-09-30", nil, time.Time{}, time.Time{}},
		{"relative skips boundaries that are not required", mk(nil, onlyEnds, map[model.Boundary]contract.Deadline{model.Consumed: rel(2 * time.Hour)}),
			model.Consumed, "2026-09-30", map[model.Boundary]time.Time{model.Produced: utc("2026-10-01T01:00:00Z"), model.Identified: utc("2026-10-01T05:00:00Z")}, latest, utc("2026-10-01T03:00:00Z")},
		{"relative on the first required boundary counts from the business date", mk(shanghai, all, map[model.Boundary]contract.Deadline{model.Produced: rel(26 * time.Hour)}),
			model.Produced, "2026-09-30", nil, time.Time{}, utc("2026-09-30T18:00:00Z")},
		{"default rule: 24 hours after the latest event", contract.Default("p"),
			model.Identified, "2026-09-30", nil, latest, utc("2026-10-02T01:20:05Z")},
		{"default rule without events", contract.Default("p"), model.Produced, "2026-09-30", nil, time.Time{}, time.Time{}},
		{"not a boundary", contract.Default("p"), model.NoBoundary, "2026-09-30", nil, latest, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := model.BatchKey{Pipeline: "p", BusinessDate: model.MustParseDate(tt.date), BatchID: "b"}
			got, ok := tt.c.Due(tt.b, key, provenAt(tt.proven), tt.latest)
			if tt.want.IsZero() {
				if ok {
					t.Errorf("Due(%s) = %v, want no deadline", tt.b, got)
				}
				return
			}
			if !ok || !got.Equal(tt.want) {
				t.Errorf("Due(%s) = %v, %v; want %v", tt.b, got.UTC(), ok, tt.want)
			}
		})
	}
}

func TestPrevious(t *testing.T) {
	tests := []struct {
		name     string
		schedule contract.Schedule
		batchID  string // template, "" for none
		date     string
		want     string // "" for no previous batch
	}{
		{"daily", contract.Daily, "{yyyymmdd}", "2026-09-30", "p/2026-09-29/20260929"},
		{"daily across a month", contract.Daily, "{yyyymmdd}", "2026-10-01", "p/2026-09-30/20260930"},
		{"daily, weekend included", contract.Daily, "{yyyymmdd}", "2026-10-05", "p/2026-10-04/20261004"},
		{"daily without a batch_id template falls back to the compact date", contract.Daily, "", "2026-09-30", "p/2026-09-29/20260929"},
		{"daily with another batch_id template", contract.Daily, "{business_date}", "2026-09-30", "p/2026-09-29/2026-09-29"},
		{"weekdays, Monday to Friday", contract.Weekdays, "{yyyymmdd}", "2026-10-05", "p/2026-10-02/20261002"},
		{"weekdays, Tuesday to Monday", contract.Weekdays, "{yyyymmdd}", "2026-10-06", "p/2026-10-05/20261005"},
		{"weekdays, Sunday to Friday", contract.Weekdays, "{yyyymmdd}", "2026-10-04", "p/2026-10-02/20261002"},
		{"no schedule", contract.NoSchedule, "{yyyymmdd}", "2026-09-30", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contract.Default("p")
			c.Schedule = tt.schedule
			if tt.batchID != "" {
				c.BatchID = contract.MustTemplate(tt.batchID)
			}
			got, ok := c.Previous(model.BatchKey{Pipeline: "p", BusinessDate: model.MustParseDate(tt.date), BatchID: "x"})
			if tt.want == "" {
				if ok {
					t.Errorf("Previous = %s, want none", got)
				}
				return
			}
			if !ok || got.String() != tt.want {
				t.Errorf("Previous = %s, %v; want %s", got, ok, tt.want)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	c := contract.Default("p")
	if !c.IsDefault() || c.Name() != "default" || c.Required != model.AllBoundaries || !c.Rows.Equal || c.Location != time.UTC {
		t.Errorf("Default = %+v", c)
	}
	key := model.BatchKey{Pipeline: "p", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	if _, ok := c.ArtifactName(key); ok {
		t.Error("default contract derives an artifact name")
	}
	if _, ok := c.SignalName(key); ok {
		t.Error("default contract derives a signal name")
	}
	if _, ok := c.ExpectedBatchID("p", key.BusinessDate); ok {
		t.Error("default contract derives a batch id")
	}
	c.Source = "x.yaml"
	if c.IsDefault() || c.Name() != "x.yaml" {
		t.Errorf("Name = %q after setting Source", c.Name())
	}
}

func TestTemplateRender(t *testing.T) {
	key := model.BatchKey{Pipeline: "abs.daily", BusinessDate: model.MustParseDate("2026-09-05"), BatchID: "B7"}
	tests := []struct{ tmpl, want string }{
		{"account_balance_snapshot_{batch_id}.csv", "account_balance_snapshot_B7.csv"},
		{"{pipeline}/{business_date}/{yyyymmdd}", "abs.daily/2026-09-05/20260905"},
		{"{yyyy}-{mm}-{dd}", "2026-09-05"},
		{"{yyyy}{yyyy}", "20262026"},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		tm, err := contract.ParseTemplate(tt.tmpl)
		if err != nil {
			t.Errorf("ParseTemplate(%q): %v", tt.tmpl, err)
			continue
		}
		if got := tm.Render(key); got != tt.want {
			t.Errorf("Render(%q) = %q, want %q", tt.tmpl, got, tt.want)
		}
		if tm.String() != tt.tmpl || tm.IsZero() {
			t.Errorf("String() = %q, IsZero() = %v", tm, tm.IsZero())
		}
	}
	tm := contract.MustTemplate("x_{batch_id}")
	if !tm.Uses("batch_id") || tm.Uses("yyyymmdd") || tm.Uses("nonsense") {
		t.Error("Uses is wrong")
	}
	if !(contract.Template{}).IsZero() {
		t.Error("zero Template is not IsZero")
	}
}

func TestParseTemplateErrors(t *testing.T) {
	tests := []struct{ in, err string }{
		{"x_{date}", `template "x_{date}": unknown placeholder {date} (want {pipeline}, {business_date}, {batch_id}, {yyyymmdd}, {yyyy}, {mm}, {dd}, {hh} or {mi})`},
		{"x_{}", `template "x_{}": unknown placeholder {} (want {pipeline}, {business_date}, {batch_id}, {yyyymmdd}, {yyyy}, {mm}, {dd}, {hh} or {mi})`},
		{"x_{batch_id", `template "x_{batch_id": unclosed '{'`},
		{"x}", `template "x}": '}' without '{'`},
		{"a}{batch_id}", `template "a}{batch_id}": '}' without '{'`},
		{"{batch_id}}", `template "{batch_id}}": '}' without '{'`},
	}
	for _, tt := range tests {
		_, err := contract.ParseTemplate(tt.in)
		if err == nil || err.Error() != tt.err {
			t.Errorf("ParseTemplate(%q) error = %v, want %q", tt.in, err, tt.err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustTemplate of a bad template did not panic")
		}
	}()
	contract.MustTemplate("{nope}")
}

// TestDuesMatchWallClock checks the cached deadline arithmetic against
// the calendar rule (firstOccurrence, a brute-force reading) over a year of days in zones with daylight saving, including
// one that skips midnight (America/Santiago) and one with a 30-minute
// shift (Australia/Lord_Howe).
func TestDuesMatchWallClock(t *testing.T) {
	for _, zone := range []string{"Europe/London", "America/New_York", "America/Santiago", "Australia/Lord_Howe", "Asia/Shanghai", "UTC"} {
		loc := mustLocation(t, zone)
		c := contract.Default("p")
		c.Location = loc
		tods := []time.Duration{0, 30 * time.Minute, 2*time.Hour + 30*time.Minute, 6 * time.Hour, 23*time.Hour + 59*time.Minute}
		for i, b := range []model.Boundary{model.Produced, model.Finalized, model.Transferred, model.SignalDelivered, model.Consumed} {
			c.Deadlines[b] = contract.Deadline{Kind: contract.Absolute, Days: i % 2, TimeOfDay: tods[i]}
		}
		none := func(model.Boundary) (time.Time, bool) { return time.Time{}, false }
		start := model.MustParseDate("2026-01-01")
		for n := 0; n < 366; n++ {
			key := model.BatchKey{Pipeline: "p", BusinessDate: start.AddDays(n), BatchID: "x"}
			due, ok := c.Dues(key, none, time.Time{})
			for _, b := range []model.Boundary{model.Produced, model.Finalized, model.Transferred, model.SignalDelivered, model.Consumed} {
				d := c.Deadlines[b]
				day := key.BusinessDate.AddDays(d.Days)
				tod := d.TimeOfDay
				want := firstOccurrence(day, tod, loc)
				if !ok[b] || !due[b].Equal(want) {
					t.Fatalf("%s %s %s: due %v, want %v", zone, key.BusinessDate, b, due[b], want)
				}
			}
		}
	}
}

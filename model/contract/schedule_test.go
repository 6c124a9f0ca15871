package contract_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"
	_ "time/tzdata" // zones with daylight saving, on any machine

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// mustParse parses a contract from lines joined by newlines.
func mustParse(t testing.TB, lines ...string) *contract.Contract {
	t.Helper()
	c, err := contract.Parse("c.yaml", []byte(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// keys formats keys as date/id, the part of a key a schedule decides.
func keys(ks []model.BatchKey) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.BusinessDate.String() + "/" + k.BatchID
	}
	return out
}

// pKey parses "date/id" as a key of pipeline p.
func pKey(t *testing.T, s string) model.BatchKey {
	t.Helper()
	k, err := model.ParseBatchKey("p/" + s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func hourlyIDs(date string) []string {
	var out []string
	compact := strings.ReplaceAll(date, "-", "")
	for h := 0; h < 24; h++ {
		out = append(out, date+"/"+compact+string(rune('0'+h/10))+string(rune('0'+h%10)))
	}
	return out
}

func TestExpected(t *testing.T) {
	d := model.MustParseDate
	daily := []string{"pipeline: p", "schedule: daily", `batch_id: "{yyyymmdd}"`}
	hourly := []string{"pipeline: p", "schedule: hourly", "timezone: America/New_York", `batch_id: "{yyyymmdd}{hh}"`}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	tests := []struct {
		name     string
		contract []string
		from, to string
		want     []string // nil: Expected returns nil
	}{
		{"daily across a year end", daily, "2027-12-30", "2028-01-02",
			[]string{"2027-12-30/20271230", "2027-12-31/20271231", "2028-01-01/20280101", "2028-01-02/20280102"}},
		{"daily over a leap day", daily, "2028-02-28", "2028-03-01",
			[]string{"2028-02-28/20280228", "2028-02-29/20280229", "2028-03-01/20280301"}},
		{"one day", daily, "2026-09-30", "2026-09-30", []string{"2026-09-30/20260930"}},
		{"weekdays across a weekend and a month end", []string{"pipeline: p", "schedule: weekdays", `batch_id: "{business_date}"`}, "2026-10-30", "2026-11-02",
			[]string{"2026-10-30/2026-10-30", "2026-11-02/2026-11-02"}},
		{"hourly on a spring-forward day still has 24 batches", hourly, "2026-03-08", "2026-03-08", hourlyIDs("2026-03-08")},
		{"hourly on a fall-back day still has 24 batches", hourly, "2026-11-01", "2026-11-01", hourlyIDs("2026-11-01")},
		{"hourly across a month end", hourly, "2026-09-30", "2026-10-01", append(hourlyIDs("2026-09-30"), hourlyIDs("2026-10-01")...)},
		{"cron on weekdays across a daylight-saving end", []string{"pipeline: p", `schedule: "30 6 * * 1-5"`, "timezone: Europe/London", `batch_id: "{yyyymmdd}"`}, "2026-10-23", "2026-10-26",
			[]string{"2026-10-23/20261023", "2026-10-26/20261026"}},
		{"cron every six hours across a year end", []string{"pipeline: p", `schedule: "0 */6 * * *"`, `batch_id: "{yyyymmdd}{hh}"`}, "2026-12-31", "2027-01-01",
			[]string{"2026-12-31/2026123100", "2026-12-31/2026123106", "2026-12-31/2026123112", "2026-12-31/2026123118",
				"2027-01-01/2027010100", "2027-01-01/2027010106", "2027-01-01/2027010112", "2027-01-01/2027010118"}},
		{"cron on leap days only", []string{"pipeline: p", `schedule: "0 0 29 2 *"`, `batch_id: "{yyyymmdd}"`}, "2026-01-01", "2028-12-31",
			[]string{"2028-02-29/20280229"}},
		{"cron ids in key order, not time order", []string{"pipeline: p", `schedule: "0,30 1,2 * * *"`, `batch_id: "{mi}{hh}{yyyymmdd}"`}, "2026-09-30", "2026-09-30",
			[]string{"2026-09-30/000120260930", "2026-09-30/000220260930", "2026-09-30/300120260930", "2026-09-30/300220260930"}},
		{"inline holidays removed", with(daily, "holidays: [2026-10-01, 2026-10-02, 2026-10-05]"), "2026-09-30", "2026-10-06",
			[]string{"2026-09-30/20260930", "2026-10-03/20261003", "2026-10-04/20261004", "2026-10-06/20261006"}},
		{"a holiday removes every hour", with(hourly, "holidays: [2026-09-30]"), "2026-09-30", "2026-10-01", hourlyIDs("2026-10-01")},
		{"only holidays", with(daily, "holidays: [2026-10-01]"), "2026-10-01", "2026-10-01", nil},
		{"to before from", daily, "2026-10-02", "2026-10-01", nil},
		{"no schedule", []string{"pipeline: p", `batch_id: "{yyyymmdd}"`}, "2026-10-01", "2026-10-02", nil},
		{"no batch_id template", []string{"pipeline: p", "schedule: daily"}, "2026-10-01", "2026-10-02", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.contract...)
			got := c.Expected(d(tt.from), d(tt.to))
			if strings.Join(keys(got), " ") != strings.Join(tt.want, " ") {
				t.Errorf("Expected(%s, %s)\n got %v\nwant %v", tt.from, tt.to, keys(got), tt.want)
			}
			for i, k := range got {
				if k.Pipeline != "p" {
					t.Errorf("key %d: pipeline %q, want p", i, k.Pipeline)
				}
				if i > 0 && got[i-1].Compare(k) >= 0 {
					t.Errorf("keys %v and %v out of key order", got[i-1], k)
				}
			}
		})
	}
}

func TestExpectedBounded(t *testing.T) {
	c := mustParse(t, "pipeline: p", "schedule: daily", `batch_id: "{yyyymmdd}"`)
	got := c.Expected(model.MustParseDate("2000-01-01"), model.MustParseDate("2099-12-31"))
	if len(got) != contract.MaxExpectedDays {
		t.Errorf("Expected over a century: %d keys, want the first %d days", len(got), contract.MaxExpectedDays)
	}
}

func TestPreviousSchedules(t *testing.T) {
	daily := []string{"pipeline: p", "schedule: daily", `batch_id: "{yyyymmdd}"`}
	hourly := []string{"pipeline: p", "schedule: hourly", `batch_id: "{yyyymmdd}{hh}"`}
	sixHourly := []string{"pipeline: p", `schedule: "0 */6 * * *"`, `batch_id: "{yyyymmdd}{hh}"`}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	tests := []struct {
		name     string
		contract []string
		key      string // date/id
		want     string // date/id, "" for none
	}{
		{"daily across a year end", daily, "2026-01-01/20260101", "2025-12-31/20251231"},
		{"daily over a leap day", daily, "2028-03-01/20280301", "2028-02-29/20280229"},
		{"daily skips holidays", with(daily, "holidays: [2026-10-01, 2026-10-02, 2026-10-03, 2026-10-04, 2026-10-05, 2026-10-06, 2026-10-07]"), "2026-10-08/20261008", "2026-09-30/20260930"},
		{"daily without a template: compact date", []string{"pipeline: p", "schedule: daily"}, "2026-10-01/20261001", "2026-09-30/20260930"},
		{"weekdays: Monday follows Friday", []string{"pipeline: p", "schedule: weekdays", `batch_id: "{yyyymmdd}"`}, "2026-10-05/20261005", "2026-10-02/20261002"},
		{"weekdays: a Friday holiday is skipped too", []string{"pipeline: p", "schedule: weekdays", `batch_id: "{yyyymmdd}"`, "holidays: [2026-10-02]"}, "2026-10-05/20261005", "2026-10-01/20261001"},
		{"hourly: the hour before", hourly, "2026-09-30/2026093005", "2026-09-30/2026093004"},
		{"hourly: 00 follows 23 of the day before", hourly, "2026-10-01/2026100100", "2026-09-30/2026093023"},
		{"hourly: across a year end", hourly, "2027-01-01/2027010100", "2026-12-31/2026123123"},
		{"hourly: a holiday is skipped", with(hourly, "holidays: [2026-09-30]"), "2026-10-01/2026100100", "2026-09-29/2026092923"},
		{"hourly: a batch id with no hour", hourly, "2026-09-30/20260930", ""},
		{"hourly: a batch id of another date", hourly, "2026-09-30/2026092905", ""},
		{"hourly: hour out of range", hourly, "2026-09-30/2026093024", ""},
		{"cron: the firing before, same day", sixHourly, "2026-10-01/2026100112", "2026-10-01/2026100106"},
		{"cron: the last firing of the day before", sixHourly, "2026-10-01/2026100100", "2026-09-30/2026093018"},
		{"cron: between firings", sixHourly, "2026-10-01/2026100103", "2026-10-01/2026100100"},
		{"cron on weekdays at 06:30", []string{"pipeline: p", `schedule: "30 6 * * 1-5"`, `batch_id: "{yyyymmdd}"`}, "2026-10-05/20261005", "2026-10-02/20261002"},
		{"cron on leap days", []string{"pipeline: p", `schedule: "0 0 29 2 *"`, `batch_id: "{yyyymmdd}"`}, "2028-02-29/20280229", "2024-02-29/20240229"},
		{"no schedule", []string{"pipeline: p", `batch_id: "{yyyymmdd}"`}, "2026-10-01/20261001", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, key := mustParse(t, tt.contract...), pKey(t, tt.key)
			prev, ok := c.Previous(key)
			got := ""
			if ok {
				got = keys([]model.BatchKey{prev})[0]
				if prev.Pipeline != "p" {
					t.Errorf("pipeline %q, want p", prev.Pipeline)
				}
			}
			if got != tt.want {
				t.Errorf("Previous(%s) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

// TestPreviousInvertsExpected walks each schedule's calendar backwards with
// Previous and checks it meets every expected batch, in order.
func TestPreviousInvertsExpected(t *testing.T) {
	for _, lines := range [][]string{
		{"pipeline: p", "schedule: weekdays", `batch_id: "{yyyymmdd}"`, "holidays: [2028-02-29, 2028-03-01]"},
		{"pipeline: p", "schedule: hourly", "timezone: America/New_York", `batch_id: "{yyyymmdd}{hh}"`, "holidays: [2028-03-01]"},
		{"pipeline: p", `schedule: "15,45 */5 * * 1,3"`, `batch_id: "{business_date}T{hh}{mi}"`},
	} {
		c := mustParse(t, lines...)
		exp := c.Expected(model.MustParseDate("2028-02-20"), model.MustParseDate("2028-03-10"))
		if len(exp) < 10 {
			t.Fatalf("%s: only %d expected batches", c.Schedule, len(exp))
		}
		for i := len(exp) - 1; i > 0; i-- {
			prev, ok := c.Previous(exp[i])
			if !ok || prev != exp[i-1] {
				t.Errorf("%s: Previous(%v) = %v, %v; want %v", c.Schedule, exp[i], prev, ok, exp[i-1])
			}
		}
	}
}

func TestStart(t *testing.T) {
	tests := []struct {
		name     string
		contract []string
		key      string
		want     string // RFC 3339, "" for none
	}{
		{"daily: midnight in the zone", []string{"pipeline: p", "schedule: daily", "timezone: Asia/Shanghai"}, "2026-09-30/20260930", "2026-09-29T16:00:00Z"},
		{"daily where midnight is skipped: when the clock jumps", []string{"pipeline: p", "schedule: daily", "timezone: America/Santiago"}, "2026-09-06/20260906", "2026-09-06T04:00:00Z"},
		{"daily the day before", []string{"pipeline: p", "schedule: daily", "timezone: America/Santiago"}, "2026-09-05/20260905", "2026-09-05T04:00:00Z"},
		{"weekdays: midnight", []string{"pipeline: p", "schedule: weekdays"}, "2026-10-05/20261005", "2026-10-05T00:00:00Z"},
		{"hourly", []string{"pipeline: p", "schedule: hourly", "timezone: Asia/Shanghai", `batch_id: "{yyyymmdd}{hh}"`}, "2026-09-30/2026093005", "2026-09-29T21:00:00Z"},
		{"hourly before a spring-forward", []string{"pipeline: p", "schedule: hourly", "timezone: America/New_York", `batch_id: "{yyyymmdd}{hh}"`}, "2026-03-08/2026030801", "2026-03-08T06:00:00Z"},
		{"hourly in the skipped hour starts when the clock jumps", []string{"pipeline: p", "schedule: hourly", "timezone: America/New_York", `batch_id: "{yyyymmdd}{hh}"`}, "2026-03-08/2026030802", "2026-03-08T07:00:00Z"},
		{"hourly after a spring-forward", []string{"pipeline: p", "schedule: hourly", "timezone: America/New_York", `batch_id: "{yyyymmdd}{hh}"`}, "2026-03-08/2026030803", "2026-03-08T07:00:00Z"},
		{"hourly in the repeated hour: the first", []string{"pipeline: p", "schedule: hourly", "timezone: America/New_York", `batch_id: "{yyyymmdd}{hh}"`}, "2026-11-01/2026110101", "2026-11-01T05:00:00Z"},
		{"hourly after a fall-back", []string{"pipeline: p", "schedule: hourly", "timezone: America/New_York", `batch_id: "{yyyymmdd}{hh}"`}, "2026-11-01/2026110102", "2026-11-01T07:00:00Z"},
		{"cron in summer time", []string{"pipeline: p", `schedule: "30 6 * * *"`, "timezone: Europe/London"}, "2026-10-24/20261024", "2026-10-24T05:30:00Z"},
		{"cron after the clocks go back", []string{"pipeline: p", `schedule: "30 6 * * *"`, "timezone: Europe/London"}, "2026-10-25/20261025", "2026-10-25T06:30:00Z"},
		{"cron with minutes in the id", []string{"pipeline: p", `schedule: "*/20 9 * * *"`, `batch_id: "{yyyymmdd}-{mi}"`}, "2026-10-01/20261001-40", "2026-10-01T09:40:00Z"},
		{"no schedule", []string{"pipeline: p"}, "2026-10-01/20261001", ""},
		{"hourly id without an hour", []string{"pipeline: p", "schedule: hourly", `batch_id: "{yyyymmdd}{hh}"`}, "2026-10-01/x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, key := mustParse(t, tt.contract...), pKey(t, tt.key)
			start, ok := c.Start(key)
			got := ""
			if ok {
				got = start.UTC().Format(time.RFC3339)
			}
			if got != tt.want {
				t.Errorf("Start(%s) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

// TestDuesWithoutEvents is the deadline of an expected batch that never
// showed up: no boundary proven, no latest event.
func TestDuesWithoutEvents(t *testing.T) {
	none := func(model.Boundary) (time.Time, bool) { return time.Time{}, false }
	tests := []struct {
		name     string
		contract []string
		key      string
		want     [model.Consumed + 1]string // RFC 3339 per boundary, "" for none
	}{
		{"daily, no deadlines: start + 24h for every boundary", []string{"pipeline: p", "schedule: daily", "timezone: Asia/Shanghai"}, "2026-09-30/20260930",
			[...]string{"", "2026-09-30T16:00:00Z", "2026-09-30T16:00:00Z", "2026-09-30T16:00:00Z", "2026-09-30T16:00:00Z", "2026-09-30T16:00:00Z", "2026-09-30T16:00:00Z", "2026-09-30T16:00:00Z"}},
		{"daily, absolute first, relative chained", []string{"pipeline: p", "schedule: daily", "timezone: Asia/Shanghai", "required: [produced, finalized, consumed]", "deadlines:", `  produced: "business_date + 1d 02:00"`, `  finalized: "+30m"`}, "2026-09-30/20260930",
			[...]string{"", "2026-09-30T18:00:00Z", "2026-09-30T18:30:00Z", "", "", "", "", "2026-09-30T16:00:00Z"}},
		{"hourly, start + 90m", []string{"pipeline: p", "schedule: hourly", "timezone: Asia/Shanghai", `batch_id: "{yyyymmdd}{hh}"`, "required: [produced, consumed]", "deadlines:", `  produced: "start + 90m"`, `  consumed: "+1h"`}, "2026-09-30/2026093005",
			[...]string{"", "2026-09-29T22:30:00Z", "", "", "", "", "", "2026-09-29T23:30:00Z"}},
		{"hourly, relative first counts from the start", []string{"pipeline: p", "schedule: hourly", `batch_id: "{yyyymmdd}{hh}"`, "required: [produced]", "deadlines:", `  produced: "+45m"`}, "2026-09-30/2026093013",
			[...]string{"", "2026-09-30T13:45:00Z", "", "", "", "", "", ""}},
		{"cron, default rule: start + 24h", []string{"pipeline: p", `schedule: "30 6 * * 1-5"`, "required: [produced]"}, "2026-10-02/20261002",
			[...]string{"", "2026-10-03T06:30:00Z", "", "", "", "", "", ""}},
		{"no schedule, no deadlines: nothing to count from", []string{"pipeline: p", "required: [produced]"}, "2026-10-02/20261002",
			[...]string{"", "", "", "", "", "", "", ""}},
		{"no schedule, relative first: midnight", []string{"pipeline: p", "required: [produced]", "deadlines:", `  produced: "+6h"`}, "2026-10-02/20261002",
			[...]string{"", "2026-10-02T06:00:00Z", "", "", "", "", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, key := mustParse(t, tt.contract...), pKey(t, tt.key)
			due, ok := c.Dues(key, none, time.Time{})
			for _, b := range model.Ladder {
				got := ""
				if ok[b] && c.Requires(b) {
					got = due[b].UTC().Format(time.RFC3339)
				}
				if got != tt.want[b] {
					t.Errorf("%s due %q, want %q", b, got, tt.want[b])
				}
			}
		})
	}
}

func TestHolidaysFile(t *testing.T) {
	fsys := fstest.MapFS{
		"contracts/p.yaml":          {Data: []byte("pipeline: p\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\nholidays: holidays/cn.txt\n")},
		"contracts/q.yaml":          {Data: []byte("pipeline: q\nschedule: weekdays\nbatch_id: \"{yyyymmdd}\"\nholidays: ../shared/q.txt\n")},
		"contracts/holidays/cn.txt": {Data: []byte("# National Day\n2026-10-01\n2026-10-02  # Friday\n\n2026-10-01\n")},
		"shared/q.txt":              {Data: []byte("2026-10-05\n")},
	}
	set, err := contract.LoadFS(fsys, "contracts")
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	d := model.MustParseDate
	tests := []struct {
		pipeline string
		want     []string
	}{
		{"p", []string{"2026-09-30/20260930", "2026-10-03/20261003", "2026-10-04/20261004", "2026-10-05/20261005"}},
		{"q", []string{"2026-09-30/20260930", "2026-10-01/20261001", "2026-10-02/20261002"}},
	}
	for _, tt := range tests {
		got := keys(set.For(tt.pipeline).Expected(d("2026-09-30"), d("2026-10-05")))
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s: Expected\n got %v\nwant %v", tt.pipeline, got, tt.want)
		}
	}
	if h := set.For("p").Holidays; len(h) != 2 {
		t.Errorf("p: holidays %v, want two dates (the repeat dropped)", h)
	}
}

func TestHolidaysFileErrors(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"bad dates, by line of the holiday file", fstest.MapFS{
			"c/p.yaml": {Data: []byte("pipeline: p\nschedule: daily\nholidays: h.txt\n")},
			"c/h.txt":  {Data: []byte("# dates\n2026-10-01\n2026-13-01\n2026/10/03 # slashes\n")},
		}, "c/h.txt:3: holidays: \"2026-13-01\": month out of range (want one date YYYY-MM-DD per line, # for comments)\n" +
			"c/h.txt:4: holidays: \"2026/10/03\": want YYYY-MM-DD (want one date YYYY-MM-DD per line, # for comments)"},
		{"missing file", fstest.MapFS{
			"c/p.yaml": {Data: []byte("pipeline: p\nschedule: daily\nholidays: nowhere.txt\n")},
		}, `c/p.yaml:3: holidays: reading "c/nowhere.txt": open c/nowhere.txt: file does not exist`},
		{"absolute path", fstest.MapFS{
			"c/p.yaml": {Data: []byte("pipeline: p\nschedule: daily\nholidays: /etc/holidays\n")},
		}, `c/p.yaml:3: holidays: "/etc/holidays": want a path relative to the contract file, with forward slashes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.LoadFS(tt.fsys, "c")
			if err == nil || err.Error() != tt.want {
				t.Errorf("LoadFS error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

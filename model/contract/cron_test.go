package contract_test

import (
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

func hm(h, m int) int { return h*60 + m }

func TestParseCron(t *testing.T) {
	d := model.MustParseDate
	tests := []struct {
		expr  string
		slots []int
		fires []string // dates it fires on
		skips []string // dates it does not
	}{
		{"0 0 * * *", []int{0}, []string{"2026-02-28", "2028-02-29"}, nil},
		{"30 6 * * 1-5", []int{hm(6, 30)}, []string{"2026-10-02"}, []string{"2026-10-03", "2026-10-04"}}, // Fri; Sat, Sun
		{"*/15 9-10 * * *", []int{hm(9, 0), hm(9, 15), hm(9, 30), hm(9, 45), hm(10, 0), hm(10, 15), hm(10, 30), hm(10, 45)}, nil, nil},
		{"5,35 */6 * * *", []int{hm(0, 5), hm(0, 35), hm(6, 5), hm(6, 35), hm(12, 5), hm(12, 35), hm(18, 5), hm(18, 35)}, nil, nil},
		{"0 8-18/5 * * *", []int{hm(8, 0), hm(13, 0), hm(18, 0)}, nil, nil},
		{"0 0 29 2 *", []int{0}, []string{"2028-02-29"}, []string{"2026-02-28", "2026-03-01"}},
		{"0 0 31 * *", []int{0}, []string{"2026-12-31", "2026-01-31"}, []string{"2026-11-30"}},
		{"0 12 1 jan,Jul *", []int{hm(12, 0)}, []string{"2026-01-01", "2026-07-01"}, []string{"2026-02-01"}},
		{"0 0 * * SUN", []int{0}, []string{"2026-10-04"}, []string{"2026-10-05"}},
		{"0 0 * * 7", []int{0}, []string{"2026-10-04"}, []string{"2026-10-05"}}, // 7 is Sunday too
		{"0 0 * * 5-7", []int{0}, []string{"2026-10-02", "2026-10-03", "2026-10-04"}, []string{"2026-10-05"}},
		// Both day fields restricted: either matches (Vixie cron).
		{"0 0 13 * 5", []int{0}, []string{"2026-11-13", "2026-10-02", "2026-10-13"}, []string{"2026-10-03"}},
		// A day field starting with * restricts nothing alone: both must match.
		{"0 0 */2 * 1", []int{0}, []string{"2026-10-05"}, []string{"2026-10-12", "2026-10-07"}},
		{"@daily", []int{0}, []string{"2026-10-05"}, nil},
		{"@hourly", []int{0, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 660, 720, 780, 840, 900, 960, 1020, 1080, 1140, 1200, 1260, 1320, 1380}, nil, nil},
		{"@monthly", []int{0}, []string{"2026-11-01"}, []string{"2026-11-02"}},
		{"  0   6  *  *  *  ", []int{hm(6, 0)}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			c, err := contract.ParseCron(tt.expr)
			if err != nil {
				t.Fatalf("ParseCron: %v", err)
			}
			if got := c.Slots(); !equalInts(got, tt.slots) {
				t.Errorf("Slots = %v, want %v", got, tt.slots)
			}
			for _, s := range tt.fires {
				if !c.FiresOn(d(s)) {
					t.Errorf("FiresOn(%s) = false, want true", s)
				}
			}
			for _, s := range tt.skips {
				if c.FiresOn(d(s)) {
					t.Errorf("FiresOn(%s) = true, want false", s)
				}
			}
			if c.String() != strings.TrimSpace(tt.expr) {
				t.Errorf("String = %q, want %q", c.String(), strings.TrimSpace(tt.expr))
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseCronErrors(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"", `cron "": 0 fields, want 5 (minute hour day-of-month month day-of-week)`},
		{"0 0 * *", `cron "0 0 * *": 4 fields, want 5 (minute hour day-of-month month day-of-week)`},
		{"0 0 0 * * *", `cron "0 0 0 * * *": 6 fields: seconds are not supported, a schedule fires at most once a minute (want minute hour day-of-month month day-of-week)`},
		{"60 * * * *", `cron "60 * * * *": minute field "60": 60 out of range 0-59`},
		{"0 24 * * *", `cron "0 24 * * *": hour field "24": 24 out of range 0-23`},
		{"0 0 0 * *", `cron "0 0 0 * *": day-of-month field "0": 0 out of range 1-31`},
		{"0 0 * 13 *", `cron "0 0 * 13 *": month field "13": 13 out of range 1-12`},
		{"0 0 * * 8", `cron "0 0 * * 8": day-of-week field "8": 8 out of range 0-7`},
		{"0 0 * FOO *", `cron "0 0 * FOO *": month field "FOO": "FOO" is not a number from 1 to 12 or a name (JAN, FEB, MAR, APR, MAY, JUN, JUL, AUG, SEP, OCT, NOV, DEC)`},
		{"x * * * *", `cron "x * * * *": minute field "x": "x" is not a number from 0 to 59`},
		{"-1 * * * *", `cron "-1 * * * *": minute field "-1": "" is not a number from 0 to 59`},
		{"10-5 * * * *", `cron "10-5 * * * *": minute field "10-5": range 10-5 runs backwards`},
		{"*/0 * * * *", `cron "*/0 * * * *": minute field "*/0": step "0": want a whole number from 1 to 60`},
		{"*/x * * * *", `cron "*/x * * * *": minute field "*/x": step "x": want a whole number from 1 to 60`},
		{"5/15 * * * *", `cron "5/15 * * * *": minute field "5/15": a step needs * or a range before it (write 5-59/15)`},
		{"1,,2 * * * *", `cron "1,,2 * * * *": minute field "1,,2": empty list item`},
		{"0 0 30 2 *", `cron "0 0 30 2 *": never fires: no month has that day`},
		{"0 0 31 4,6,9,11 *", `cron "0 0 31 4,6,9,11 *": never fires: no month has that day`},
		{"@reboot", `cron "@reboot": unknown shorthand (want @yearly, @monthly, @weekly, @daily or @hourly, or five fields)`},
		{"@every 30s", `cron "@every 30s": unknown shorthand (want @yearly, @monthly, @weekly, @daily or @hourly, or five fields)`},
		{"001 * * * *", `cron "001 * * * *": minute field "001": "001" is not a number from 0 to 59`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			c, err := contract.ParseCron(tt.expr)
			if err == nil {
				t.Fatalf("ParseCron(%q) = %v, want error %q", tt.expr, c.Slots(), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

// FuzzParseCron checks that ParseCron never panics and that what it accepts
// is a usable calendar: it fires at some minute of some day, at most once a
// minute (slots ascending and distinct, within a day), and reads the same
// when parsed again from its String.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"0 0 * * *", "*/15 9-17 * * 1-5", "0 0 29 2 *", "0 0 13 * FRI", "5/15 * * * *", "@weekly", "1,2,3-9/2 0 1 JAN-MAR 0,7", "0 0 0 * * *", "0-59/60 23 31 12 *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := contract.ParseCron(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cron ") {
				t.Fatalf("error %q does not name the expression", err)
			}
			return
		}
		slots := c.Slots()
		if len(slots) == 0 {
			t.Fatalf("%q: accepted, but no time of day fires", s)
		}
		for i, m := range slots {
			if m < 0 || m >= 24*60 || (i > 0 && m <= slots[i-1]) {
				t.Fatalf("%q: slots %v not ascending minutes of a day", s, slots)
			}
		}
		again, err := contract.ParseCron(c.String())
		if err != nil {
			t.Fatalf("%q: String %q does not parse: %v", s, c.String(), err)
		}
		if !equalInts(again.Slots(), slots) {
			t.Fatalf("%q: reparsed slots %v, want %v", s, again.Slots(), slots)
		}
		d := model.Date{Year: 2024, Month: time.January, Day: 1}
		for i := 0; i < 8*366; i++ {
			if c.FiresOn(d) {
				return
			}
			d = d.AddDays(1)
		}
		t.Fatalf("%q: accepted, but fires on no day in eight years", s)
	})
}

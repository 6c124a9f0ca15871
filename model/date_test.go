package model_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

func TestParseDate(t *testing.T) {
	tests := []struct {
		in   string
		want model.Date
		err  string
	}{
		{"2026-09-30", model.Date{Year: 2026, Month: time.September, Day: 30}, ""},
		{"2024-02-29", model.Date{Year: 2024, Month: time.February, Day: 29}, ""},
		{"2000-02-29", model.Date{Year: 2000, Month: time.February, Day: 29}, ""},
		{"0001-01-01", model.Date{Year: 1, Month: time.January, Day: 1}, ""},
		{"9999-12-31", model.Date{Year: 9999, Month: time.December, Day: 31}, ""},
		{"2026-13-01", model.Date{}, "month out of range"},
		{"2026-00-10", model.Date{}, "month out of range"},
		{"2026-02-29", model.Date{}, "day out of range"},
		{"1900-02-29", model.Date{}, "day out of range"},
		{"2026-04-31", model.Date{}, "day out of range"},
		{"2026-09-00", model.Date{}, "day out of range"},
		{"20260930", model.Date{}, "want YYYY-MM-DD"},
		{"2026-9-30", model.Date{}, "want YYYY-MM-DD"},
		{"2026/09/30", model.Date{}, "want YYYY-MM-DD"},
		{"2026-09-3x", model.Date{}, "want YYYY-MM-DD"},
		{"+026-09-30", model.Date{}, "want YYYY-MM-DD"},
		{"2026-09-30T00:00:00Z", model.Date{}, "want YYYY-MM-DD"},
		{"", model.Date{}, "want YYYY-MM-DD"},
	}
	for _, tt := range tests {
		got, err := model.ParseDate(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseDate(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDate(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if s := got.String(); s != tt.in {
			t.Errorf("ParseDate(%q).String() = %q", tt.in, s)
		}
	}
}

func TestMustParseDatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParseDate(\"2026-13-01\") did not panic")
		}
	}()
	model.MustParseDate("2026-13-01")
}

func TestDateFormat(t *testing.T) {
	tests := []struct {
		d       model.Date
		str     string
		compact string
	}{
		{model.MustParseDate("2026-09-30"), "2026-09-30", "20260930"},
		{model.MustParseDate("0042-01-02"), "0042-01-02", "00420102"},
		{model.Date{}, "", "00000000"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.str {
			t.Errorf("%#v.String() = %q, want %q", tt.d, got, tt.str)
		}
		if got := tt.d.Compact(); got != tt.compact {
			t.Errorf("%#v.Compact() = %q, want %q", tt.d, got, tt.compact)
		}
	}
	if got := string(model.MustParseDate("2026-09-30").AppendFormat([]byte("d="))); got != "d=2026-09-30" {
		t.Errorf("AppendFormat = %q", got)
	}
	if !(model.Date{}).IsZero() || model.MustParseDate("2026-09-30").IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestDateAddDays(t *testing.T) {
	tests := []struct {
		from string
		n    int
		want string
	}{
		{"2026-09-30", 1, "2026-10-01"},
		{"2026-09-30", -1, "2026-09-29"},
		{"2026-03-01", -1, "2026-02-28"},
		{"2024-03-01", -1, "2024-02-29"},
		{"2026-12-31", 1, "2027-01-01"},
		{"2026-01-01", -365, "2025-01-01"},
		{"2026-09-30", 0, "2026-09-30"},
	}
	for _, tt := range tests {
		if got := model.MustParseDate(tt.from).AddDays(tt.n).String(); got != tt.want {
			t.Errorf("%s.AddDays(%d) = %s, want %s", tt.from, tt.n, got, tt.want)
		}
	}
}

func TestDateCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"2026-09-30", "2026-09-30", 0},
		{"2026-09-29", "2026-09-30", -1},
		{"2026-10-01", "2026-09-30", 1},
		{"2025-12-31", "2026-01-01", -1},
		{"2026-02-01", "2026-01-31", 1},
	}
	for _, tt := range tests {
		if got := model.MustParseDate(tt.a).Compare(model.MustParseDate(tt.b)); got != tt.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDateIn(t *testing.T) {
	sh := time.FixedZone("UTC+8", 8*3600)
	got := model.MustParseDate("2026-09-30").In(sh)
	if want := time.Date(2026, 9, 29, 16, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("In(UTC+8) = %v, want %v", got, want)
	}
}

func TestDaysSinceEpoch(t *testing.T) {
	tests := []struct {
		d    string
		days int
	}{
		{"1970-01-01", 0},
		{"1970-01-02", 1},
		{"2026-09-30", 20726},
		{"1969-12-31", -1},
	}
	for _, tt := range tests {
		d := model.MustParseDate(tt.d)
		if got := d.DaysSinceEpoch(); got != tt.days {
			t.Errorf("%s.DaysSinceEpoch() = %d, want %d", tt.d, got, tt.days)
		}
		if got := model.DateFromDays(tt.days); got != d {
			t.Errorf("DateFromDays(%d) = %s, want %s", tt.days, got, tt.d)
		}
	}
}

// TestDaysSinceEpochAsTimeDate: the days counted from the civil date are
// time.Date's, a carry past a month's end and the zero Date included.
func TestDaysSinceEpochAsTimeDate(t *testing.T) {
	for _, tc := range []struct {
		d    model.Date
		want int64
	}{
		{model.Date{Year: 1970, Month: 1, Day: 1}, 0},
		{model.Date{Year: 1969, Month: 12, Day: 31}, -1},
		{model.Date{Year: 2000, Month: 2, Day: 29}, 11016},
		{model.Date{Year: 2000, Month: 3, Day: 1}, 11017},
		{model.Date{Year: 2026, Month: 3, Day: 29}, 20541},
		{model.Date{Year: 2026, Month: 2, Day: 30}, 20514}, // carries into March 2nd, as time.Date does
		{model.Date{Year: 1600, Month: 1, Day: 1}, -135140},
		{model.Date{}, -719560}, // the zero Date: time.Date(0, 0, 0) is -0001-11-30
	} {
		if got := int64(tc.d.DaysSinceEpoch()); got != tc.want {
			t.Errorf("DaysSinceEpoch(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
	for d := (model.Date{Year: 1890, Month: 1, Day: 1}); d.Year < 2210; d = d.AddDays(1) {
		if got, want := int64(d.DaysSinceEpoch()), time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Unix()/86400; got != want {
			t.Fatalf("DaysSinceEpoch(%v) = %d, time.Date says %d", d, got, want)
		}
	}
}

// AddDays and AppendFormat take a short way for the common case (a day
// within the month, a four-digit year): every date and step here must
// give what time.Date and the general formatting give, including the
// dates time.Date normalises (day 0, day 31 of a short month).
func TestDateFastPathsMatchTimeDate(t *testing.T) {
	for _, y := range []int{1, 1900, 2000, 2023, 2024, 2026, 2100, 9999} {
		for m := time.Month(0); m <= 13; m++ {
			for day := -1; day <= 32; day++ {
				d := model.Date{Year: y, Month: m, Day: day}
				for _, n := range []int{-400, -32, -31, -29, -1, 0, 1, 2, 27, 28, 29, 30, 31, 366} {
					tt := time.Date(y, m, day+n, 0, 0, 0, 0, time.UTC)
					want := model.Date{Year: tt.Year(), Month: tt.Month(), Day: tt.Day()}
					if got := d.AddDays(n); got != want {
						t.Fatalf("%+v.AddDays(%d) = %+v, time.Date says %+v", d, n, got, want)
					}
				}
				want := fmt.Sprintf("%04d-%02d-%02d", y, int(m), day)
				if day < 0 {
					want = fmt.Sprintf("%04d-%02d-%03d", y, int(m), day) // appendInt pads after the sign
				}
				if got := string(d.AppendFormat(nil)); got != want {
					t.Fatalf("%+v.AppendFormat = %q, want %q", d, got, want)
				}
			}
		}
	}
}

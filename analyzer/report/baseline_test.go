package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/report"
)

// The diagnosis shows the learned baseline beside the deadline and the
// as-of, in the contract's zone as every other time, in text and JSON.
func TestTextBaseline(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	c := seedContract(t)
	c.Location = shanghai
	usually := time.Date(2026, 9, 30, 17, 25, 0, 0, time.UTC) // 01:25 Shanghai
	for _, tc := range []struct {
		name string
		asOf time.Time
		by   time.Time // UsuallyBy of signal_delivered; zero: no baseline
		want []string
		not  []string
	}{
		{"later than usual", time.Date(2026, 9, 30, 18, 0, 0, 0, time.UTC), usually,
			[]string{"Baseline: signal_delivered usually by 2026-09-30 17:25 UTC (01:25 Asia/Shanghai, next day) (p95 over 28 days), " +
				"deadline 2026-10-01 17:20:05 UTC (01:20:05 Asia/Shanghai, next day), now 2026-09-30 18:00 UTC (02:00 Asia/Shanghai, next day); later than usual by 35m.",
				"usually by 2026-09-30 17:25 UTC (01:25 Asia/Shanghai, next day) (p95 over 28 days)"}, nil},
		{"not yet usual", time.Date(2026, 9, 30, 17, 21, 0, 0, time.UTC), usually,
			[]string{"Baseline: signal_delivered usually by"}, []string{"later than usual"}},
		{"no baseline", time.Date(2026, 9, 30, 18, 0, 0, 0, time.UTC), time.Time{}, nil, []string{"Baseline:", "usually by"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := replay.Replay(seedEvents(), c, tc.asOf, replay.Context{})
			if !tc.by.IsZero() {
				d.Baseline = "p95 over 28 days"
				for i := range d.Boundaries {
					if d.Boundaries[i].Name == "signal_delivered" {
						d.Boundaries[i].UsuallyBy = tc.by
					}
				}
			}
			out := flat(text(t, &d))
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("report has %q", n)
				}
			}
			var b bytes.Buffer
			if err := report.JSONOne(&b, &d); err != nil {
				t.Fatal(err)
			}
			js := strings.ReplaceAll(b.String(), `": "`, `":"`)
			has := strings.Contains(js, `"baseline":"p95 over 28 days"`) && strings.Contains(js, `"usually_by":"2026-09-30T17:25:00.000Z"`)
			if has != !tc.by.IsZero() {
				t.Errorf("JSON shows the baseline: %v, want %v:\n%s", has, !tc.by.IsZero(), js)
			}
		})
	}
}

package contract_test

import (
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

func TestParseReruns(t *testing.T) {
	tests := []struct {
		in, err string
	}{
		{"{batch_id}-r{n}", ""},
		{"rerun_{batch_id}_{n}_x", ""},
		{"none", ""},
		{"{batch_id}{n}", "want literal text between {batch_id} and {n}"},
		{"{batch_id}-r", "want {batch_id} and {n} in it"},
		{"{n}-{batch_id}", "{n} must come after {batch_id}"},
		{"{batch_id}-{batch_id}-{n}", "may each appear once"},
		{"{batch_id} r{n}", "only {batch_id} and {n} may be placeholders"},
		{"{batch_id}-{yyyy}-{n}", "only {batch_id} and {n} may be placeholders"},
	}
	for _, tt := range tests {
		_, err := contract.ParseReruns(tt.in)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ParseReruns(%q) = %v, want an error saying %q", tt.in, err, tt.err)
		}
	}
}

func TestAttemptOf(t *testing.T) {
	daily := parseOne(t, "pipeline: p\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\n")
	hourly := parseOne(t, "pipeline: p\nschedule: hourly\nbatch_id: \"{yyyymmdd}{hh}\"\n")
	custom := parseOne(t, "pipeline: p\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\nreruns: \"retry_{batch_id}_{n}x\"\n")
	custom2 := parseOne(t, "pipeline: p\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\nreruns: \"{batch_id}.retry{n}\"\n")
	off := parseOne(t, "pipeline: p\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\nreruns: none\n")
	free := contract.Default("p") // no batch_id template: any id re-runs
	tests := []struct {
		c        *contract.Contract
		date, id string
		base     string
		n        int
	}{
		{daily, "2026-09-30", "20260930-r2", "20260930", 2},
		{daily, "2026-09-30", "20260930-r1", "20260930", 1},
		{daily, "2026-09-30", "20260930-r12", "20260930", 12},
		{daily, "2026-09-30", "20260930", "", 0},
		{daily, "2026-09-30", "20260930-r0", "", 0},
		{daily, "2026-09-30", "20260930-r02", "", 0},
		{daily, "2026-09-30", "20260929-r2", "", 0}, // not this date's id
		{daily, "2026-09-30", "20260930-rerun", "", 0},
		{daily, "2026-09-30", "-r2", "", 0},
		{hourly, "2026-09-30", "2026093007-r2", "2026093007", 2},
		{hourly, "2026-09-30", "2026093024-r2", "", 0},
		{hourly, "2026-09-30", "20260930-r2", "", 0},
		{custom2, "2026-09-30", "20260930.retry3", "20260930", 3},
		{custom, "2026-09-30", "20260930-r2", "", 0},
		{custom, "2026-09-30", "retry_20260930_4x", "20260930", 4},
		{off, "2026-09-30", "20260930-r2", "", 0},
		{free, "2026-09-30", "anything-r3", "anything", 3},
	}
	for _, tt := range tests {
		k := model.BatchKey{Pipeline: "p", BusinessDate: model.MustParseDate(tt.date), BatchID: tt.id}
		base, n, ok := tt.c.AttemptOf(k)
		if ok != (tt.n > 0) || n != tt.n || (ok && base.BatchID != tt.base) || (!ok && base != k) {
			t.Errorf("%s AttemptOf(%s) = %s, %d, %v; want %q, %d", tt.c.Reruns, tt.id, base, n, ok, tt.base, tt.n)
		}
		if ok {
			if got := tt.c.Reruns.Render(tt.base, n); got != tt.id {
				t.Errorf("Render(%q, %d) = %q, want %q", tt.base, n, got, tt.id)
			}
		}
	}
	if d := contract.Default("p"); d.Reruns.String() != contract.DefaultReruns || d.AllowedLatenessOf() != contract.DefaultAllowedLateness {
		t.Errorf("defaults: reruns %q, allowed lateness %v", d.Reruns, d.AllowedLatenessOf())
	}
}

func TestAllowedLatenessKey(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"allowed_lateness: 2m", 2 * time.Minute, ""},
		{"allowed_lateness: 0s", 0, ""},
		{"allowed_lateness: 0", 0, ""},
		{"allowed_lateness: -1m", 0, "c.yaml:2: allowed_lateness: \"-1m\": want 0 to 24h0m0s"},
		{"allowed_lateness: 25h", 0, "want 0 to 24h0m0s"},
		{"allowed_lateness: soon", 0, "c.yaml:2: allowed_lateness: \"soon\": want a Go duration such as 5m or 90s"},
		{"reruns: \"{batch_id}{n}\"", 0, "c.yaml:2: reruns: \"{batch_id}{n}\": want literal text"},
	}
	for _, tt := range tests {
		c, err := contract.Parse("c.yaml", []byte("pipeline: p\n"+tt.in+"\n"))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if strings.HasPrefix(tt.in, "allowed_lateness") && c.AllowedLatenessOf() != tt.want {
			t.Errorf("%s: %v, want %v", tt.in, c.AllowedLatenessOf(), tt.want)
		}
	}
}

func parseOne(t *testing.T, body string) *contract.Contract {
	t.Helper()
	c, err := contract.Parse("c.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDefaultRerunsParsed checks that the zero Reruns, which is written
// out rather than parsed at every use, reads ids as DefaultReruns parsed
// does.
func TestDefaultRerunsParsed(t *testing.T) {
	parsed, err := contract.ParseReruns(contract.DefaultReruns)
	if err != nil {
		t.Fatal(err)
	}
	var zero contract.Reruns
	if zero.String() != parsed.String() || zero.Off() != parsed.Off() {
		t.Fatalf("zero Reruns is %q (off %v), want %q (off %v)", zero.String(), zero.Off(), parsed.String(), parsed.Off())
	}
	for _, id := range []string{"20260930-r2", "20260930-r12", "20260930-r0", "20260930-r", "-r1", "20260930", "2026-r09-r3", "x-r1x"} {
		b1, n1, ok1 := zero.Split(id)
		b2, n2, ok2 := parsed.Split(id)
		if b1 != b2 || n1 != n2 || ok1 != ok2 {
			t.Errorf("Split(%q): zero Reruns %q, %d, %v; parsed %q, %d, %v", id, b1, n1, ok1, b2, n2, ok2)
		}
		if r1, r2 := zero.Render(id, 3), parsed.Render(id, 3); r1 != r2 {
			t.Errorf("Render(%q, 3): zero Reruns %q, parsed %q", id, r1, r2)
		}
	}
}

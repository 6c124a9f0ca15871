package contract_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	// The zone database is linked in, so that the zone tests run (and can
	// fail) on a machine without one, instead of skipping.
	_ "time/tzdata"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

const fullContract = `# a comment
pipeline: account-balance-snapshot.daily
schedule: daily
timezone: Asia/Shanghai
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
required: [produced, finalized, signaled, transferred, signal_delivered, identified, consumed]
deadlines:
  produced: "business_date + 1d 02:00"
  finalized: "+30m"
  transferred: business_date + 1 day 04:00
  consumed: "business_date + 2 days 07:00:30"
rows:
  min: 1
  equal: false
`

func mustLocation(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		// time/tzdata is linked into this test binary (schedule_test.go),
		// so every IANA zone loads on any machine.
		t.Fatalf("time zone %s: %v", name, err)
	}
	return loc
}

func TestParseFull(t *testing.T) {
	sh := mustLocation(t, "Asia/Shanghai")
	c, err := contract.Parse("contracts/abs.yaml", []byte(fullContract))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Pipeline", c.Pipeline, "account-balance-snapshot.daily"},
		{"Source", c.Source, "contracts/abs.yaml"},
		{"IsDefault", c.IsDefault(), false},
		{"Schedule", c.Schedule, contract.Daily},
		{"Location", c.Location.String(), sh.String()},
		{"BatchID", c.BatchID.String(), "{yyyymmdd}"},
		{"Artifact", c.Artifact.String(), "account_balance_snapshot_{batch_id}.csv"},
		{"Signal", c.Signal.String(), "account_balance_snapshot_{batch_id}.flag"},
		{"Required", c.Required, model.AllBoundaries},
		{"produced", c.Deadlines[model.Produced], contract.Deadline{Kind: contract.Absolute, Days: 1, TimeOfDay: 2 * time.Hour, Text: "business_date + 1d 02:00"}},
		{"finalized", c.Deadlines[model.Finalized], contract.Deadline{Kind: contract.Relative, After: 30 * time.Minute, Text: "+30m"}},
		{"signaled", c.Deadlines[model.Signaled], contract.Deadline{}},
		{"transferred", c.Deadlines[model.Transferred], contract.Deadline{Kind: contract.Absolute, Days: 1, TimeOfDay: 4 * time.Hour, Text: "business_date + 1 day 04:00"}},
		{"consumed", c.Deadlines[model.Consumed], contract.Deadline{Kind: contract.Absolute, Days: 2, TimeOfDay: 7*time.Hour + 30*time.Second, Text: "business_date + 2 days 07:00:30"}},
		{"Rows", c.Rows, contract.RowRule{Min: 1, HasMin: true, Equal: false}},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %+v, want %+v", ch.name, ch.got, ch.want)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(*contract.Contract) string // "" when c is as expected
	}{
		{"only pipeline", "pipeline: p\n", func(c *contract.Contract) string {
			d := contract.Default("p")
			d.Source = "x.yaml"
			if c.Pipeline != d.Pipeline || c.Source != d.Source || c.Schedule != contract.NoSchedule ||
				c.Location != time.UTC || c.Required != model.AllBoundaries || c.Rows != d.Rows ||
				!c.BatchID.IsZero() || !c.Artifact.IsZero() || !c.Signal.IsZero() || c.Deadlines != d.Deadlines {
				return "not the default contract"
			}
			return ""
		}},
		{"rows without equal keeps equal on", "pipeline: p\nrows:\n  min: 0\n", func(c *contract.Contract) string {
			if c.Rows != (contract.RowRule{Min: 0, HasMin: true, Equal: true}) {
				return "rows wrong"
			}
			return ""
		}},
		{"weekdays, no exchange hop", "pipeline: p\nschedule: weekdays\nrequired:\n  - produced\n  - finalized\n  - consumed\n", func(c *contract.Contract) string {
			want := model.BoundarySet(0).With(model.Produced).With(model.Finalized).With(model.Consumed)
			if c.Schedule != contract.Weekdays || c.Required != want {
				return "schedule or required wrong"
			}
			return ""
		}},
		{"required in any order", "pipeline: p\nrequired: [consumed, produced]\n", func(c *contract.Contract) string {
			if c.Required != model.BoundarySet(0).With(model.Produced).With(model.Consumed) {
				return "required wrong"
			}
			return ""
		}},
		{"explicit UTC, anchors", "pipeline: p\ntimezone: UTC\ndeadlines:\n  produced: &t \"+1h\"\n  consumed: *t\n", func(c *contract.Contract) string {
			if c.Location != time.UTC || c.Deadlines[model.Consumed].After != time.Hour {
				return "timezone or alias wrong"
			}
			return ""
		}},
		{"absolute deadline on the business date, midnight", "pipeline: p\ndeadlines:\n  produced: business_date 18:30\n  consumed: business_date + 3d\n", func(c *contract.Contract) string {
			if c.Deadlines[model.Produced] != (contract.Deadline{Kind: contract.Absolute, TimeOfDay: 18*time.Hour + 30*time.Minute, Text: "business_date 18:30"}) ||
				c.Deadlines[model.Consumed] != (contract.Deadline{Kind: contract.Absolute, Days: 3, Text: "business_date + 3d"}) {
				return "deadlines wrong"
			}
			return ""
		}},
		{"templates with dates", "pipeline: p\nbatch_id: \"{yyyy}{mm}{dd}-1\"\nartifact: \"{pipeline}_{business_date}.csv\"\n", func(c *contract.Contract) string {
			if id, _ := c.ExpectedBatchID("p", model.MustParseDate("2026-09-30")); id != "20260930-1" {
				return "batch id " + id
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := contract.Parse("x.yaml", []byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if msg := tt.want(c); msg != "" {
				t.Errorf("%s: %+v", msg, c)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the full error text; one line per problem
	}{
		{"empty file", "", `c.yaml: empty contract: want at least pipeline: <name>`},
		{"only a comment", "# nothing\n", `c.yaml: empty contract: want at least pipeline: <name>`},
		{"not a mapping", "- a\n- b\n", `c.yaml:1: want a mapping of keys to values, got a list`},
		{"bad YAML", "pipeline: p\n  schedule: daily\n", `c.yaml:2: invalid YAML: mapping values are not allowed in this context`},
		{"two documents", "pipeline: a\n---\npipeline: b\n", `c.yaml:2: more than one YAML document: want one contract per file`},
		{"missing pipeline", "schedule: daily\n", `c.yaml:1: missing pipeline: every contract names its pipeline`},
		{"empty mapping", "{}\n", `c.yaml:1: missing pipeline: every contract names its pipeline`},
		{"empty pipeline", "pipeline:\n", `c.yaml:1: pipeline: must not be empty`},
		{"pipeline with slash", "pipeline: a/b\n", `c.yaml:1: pipeline: "a/b": must not contain '/', spaces or control characters`},
		{"pipeline as list", "pipeline: [a]\n", `c.yaml:1: pipeline: want a string, got a list`},
		{"unknown key", "pipeline: p\nschedul: daily\n", `c.yaml:2: schedul: unknown key (want pipeline, schedule, timezone, holidays, batch_id, artifact, signal, required, deadlines, rows, owner, severity, labels, signal_content, openlineage, reruns, allowed_lateness, for, upstreams)`},
		{"duplicate key", "pipeline: p\nschedule: daily\nschedule: weekdays\n", `c.yaml:3: schedule: duplicate key (first set at line 2)`},
		{"unknown schedule", "pipeline: p\nschedule: fortnightly\n", `c.yaml:2: schedule: unknown schedule "fortnightly" (want daily, weekdays, hourly or a cron expression such as "30 6 * * 1-5", or leave it out)`},
		{"Local time zone", "pipeline: p\ntimezone: Local\n", `c.yaml:2: timezone: "Local" is the zone of whichever machine runs handoff; name an IANA zone such as Asia/Shanghai`},
		{"unknown time zone", "pipeline: p\ntimezone: Mars/Olympus\n", `c.yaml:2: timezone: unknown time zone "Mars/Olympus": want an IANA name such as Asia/Shanghai or UTC (the zone database may be missing on this machine: unknown time zone Mars/Olympus)`},
		{"unquoted template", "pipeline: p\nbatch_id: {yyyymmdd}\n", `c.yaml:2: batch_id: want a string, got a mapping (quote templates: batch_id: "{yyyymmdd}")`},
		{"unknown placeholder", "pipeline: p\nartifact: \"x_{date}.csv\"\n", `c.yaml:2: artifact: template "x_{date}.csv": unknown placeholder {date} (want {pipeline}, {business_date}, {batch_id}, {yyyymmdd}, {yyyy}, {mm}, {dd}, {hh} or {mi})`},
		{"unclosed placeholder", "pipeline: p\nsignal: \"x_{batch_id.flag\"\n", `c.yaml:2: signal: template "x_{batch_id.flag": unclosed '{'`},
		{"stray brace", "pipeline: p\nsignal: \"x}_{batch_id}\"\n", `c.yaml:2: signal: template "x}_{batch_id}": '}' without '{'`},
		{"batch_id from itself", "pipeline: p\nbatch_id: \"b{batch_id}\"\n", `c.yaml:2: batch_id: "b{batch_id}": a batch id cannot derive from itself: use date placeholders such as {yyyymmdd}`},
		{"batch_id without date", "pipeline: p\nbatch_id: \"{pipeline}\"\n", `c.yaml:2: batch_id: "{pipeline}": does not use the business date ({yyyymmdd}, {business_date} or {yyyy}{mm}{dd}), so every batch would get the same id`},
		{"batch_id with space", "pipeline: p\nbatch_id: \"{yyyymmdd} x\"\n", `c.yaml:2: batch_id: "{yyyymmdd} x" renders "20260930 x": must not contain '/', spaces or control characters`},
		{"constant artifact", "pipeline: p\nartifact: data.csv\n", `c.yaml:2: artifact: "data.csv": does not use {batch_id} or the business date, so names cannot tell batches apart`},
		{"signal same as artifact", "pipeline: p\nartifact: \"{batch_id}\"\nsignal: \"{batch_id}\"\n", `c.yaml:3: signal: "{batch_id}" renders "20260930" for batch p/2026-09-30/20260930, the same name as artifact "{batch_id}" (line 2): the signal and the data file need different names`},
		{"signal renders the artifact's name", "pipeline: p\nartifact: \"a_{batch_id}.csv\"\nsignal: \"a_{yyyymmdd}.csv\"\n", `c.yaml:3: signal: "a_{yyyymmdd}.csv" renders "a_20260930.csv" for batch p/2026-09-30/20260930, the same name as artifact "a_{batch_id}.csv" (line 2): the signal and the data file need different names`},
		{"signal renders the artifact's name under the batch_id template", "pipeline: p\nbatch_id: \"{yyyymmdd}-1\"\nartifact: \"a_{batch_id}\"\nsignal: \"a_{yyyymmdd}-1\"\n", `c.yaml:4: signal: "a_{yyyymmdd}-1" renders "a_20260930-1" for batch p/2026-09-30/20260930-1, the same name as artifact "a_{batch_id}" (line 3): the signal and the data file need different names`},
		{"signal in a sub directory", "pipeline: p\nsignal: \"sub/x_{batch_id}.flag\"\n", `c.yaml:2: signal: "sub/x_{batch_id}.flag": contains '/': a name is one file in the receiver directory, never a path`},
		{"artifact up a directory", "pipeline: p\nartifact: \"../x_{batch_id}.csv\"\n", `c.yaml:2: artifact: "../x_{batch_id}.csv": contains '/': a name is one file in the receiver directory, never a path`},
		{"absolute artifact", "pipeline: p\nartifact: \"/etc/x_{batch_id}\"\n", `c.yaml:2: artifact: "/etc/x_{batch_id}": contains '/': a name is one file in the receiver directory, never a path`},
		{"backslash in signal", "pipeline: p\nsignal: \"..\\\\x_{batch_id}.flag\"\n", `c.yaml:2: signal: "..\\x_{batch_id}.flag": contains '\\': a name is one file in the receiver directory, never a path`},
		{"NUL in artifact", "pipeline: p\nartifact: \"x\\0{batch_id}\"\n", `c.yaml:2: artifact: "x\x00{batch_id}": contains NUL`},
		{"control character in signal", "pipeline: p\nsignal: \"x\\e[2J{batch_id}\"\n", `c.yaml:2: signal: "x\x1b[2J{batch_id}": contains the control character U+001B`},
		{"dot dot as a whole name", "pipeline: p\nbatch_id: \"{yyyymmdd}\"\nartifact: \"..\"\n", `c.yaml:3: artifact: "..": names a directory, not a file`},
		{"signal name over 255 bytes", "pipeline: p\nsignal: \"" + strings.Repeat("s", 250) + "_{batch_id}\"\n", `c.yaml:2: signal: "` + strings.Repeat("s", 250) + `_{batch_id}" renders a name of 259 bytes, over the 255-byte limit of a file name (for batch p/2026-09-30/20260930)`},
		{"required not a list", "pipeline: p\nrequired: produced\n", `c.yaml:2: required: want a list of boundaries such as [produced, finalized], got "produced"`},
		{"required empty", "pipeline: p\nrequired: []\n", `c.yaml:2: required: empty list: require at least one boundary, or leave the key out for all seven`},
		{"unknown boundary in required", "pipeline: p\nrequired:\n  - produced\n  - delivered\n", `c.yaml:4: required: unknown boundary "delivered" (want one of produced, finalized, signaled, transferred, signal_delivered, identified, consumed)`},
		{"duplicate boundary", "pipeline: p\nrequired: [produced, produced]\n", `c.yaml:2: required: produced listed twice`},
		{"unknown boundary in deadlines", "pipeline: p\ndeadlines:\n  delivered: +1h\n", `c.yaml:3: deadlines.delivered: unknown key (want produced, finalized, signaled, transferred, signal_delivered, identified, consumed)`},
		{"deadline not required", "pipeline: p\nrequired: [produced, consumed]\ndeadlines:\n  transferred: +1h\n", `c.yaml:4: deadlines.transferred: transferred is not a required boundary: add it to required or drop the deadline`},
		{"deadlines not a mapping", "pipeline: p\ndeadlines: +1h\n", `c.yaml:2: deadlines: want a mapping of keys to values, got "+1h"`},
		{"bad duration unit", "pipeline: p\ndeadlines:\n  finalized: \"+30x\"\n", `c.yaml:3: deadlines.finalized: "+30x": unknown unit "x" in duration`},
		{"days in a duration", "pipeline: p\ndeadlines:\n  finalized: \"+1d\"\n", `c.yaml:3: deadlines.finalized: "+1d": unknown unit "d" in duration (durations stop at hours: write +24h)`},
		{"missing duration unit", "pipeline: p\ndeadlines:\n  finalized: \"+30\"\n", `c.yaml:3: deadlines.finalized: "+30": missing unit in duration`},
		{"zero duration", "pipeline: p\ndeadlines:\n  finalized: \"+0s\"\n", `c.yaml:3: deadlines.finalized: "+0s": must be a positive duration`},
		{"negative duration", "pipeline: p\ndeadlines:\n  finalized: \"+-5m\"\n", `c.yaml:3: deadlines.finalized: "+-5m": must be a positive duration`},
		{"deadline without anchor", "pipeline: p\ndeadlines:\n  produced: \"06:00\"\n", `c.yaml:3: deadlines.produced: "06:00": want "business_date + 1d 06:00" (absolute), "+30m" (after the previous required boundary) or "start + 90m" (after the batch's start)`},
		{"bad time of day", "pipeline: p\ndeadlines:\n  produced: \"business_date + 1d 6:00\"\n", `c.yaml:3: deadlines.produced: "business_date + 1d 6:00": bad time of day "6:00" (want HH:MM, 00:00 to 23:59)`},
		{"time of day out of range", "pipeline: p\ndeadlines:\n  produced: \"business_date + 1d 24:00\"\n", `c.yaml:3: deadlines.produced: "business_date + 1d 24:00": time of day "24:00" out of range (want 00:00 to 23:59)`},
		{"unknown day unit", "pipeline: p\ndeadlines:\n  produced: \"business_date + 1w 06:00\"\n", `c.yaml:3: deadlines.produced: "business_date + 1w 06:00": unknown unit "w" after the number of days (want d, day or days)`},
		{"days without number", "pipeline: p\ndeadlines:\n  produced: \"business_date + d 06:00\"\n", `c.yaml:3: deadlines.produced: "business_date + d 06:00": want a number of days after '+', as in "business_date + 1d 06:00"`},
		{"days before the date", "pipeline: p\ndeadlines:\n  produced: \"business_date - 1d\"\n", `c.yaml:3: deadlines.produced: "business_date - 1d": a deadline cannot fall before the business date`},
		{"empty deadline", "pipeline: p\ndeadlines:\n  produced: \"\"\n", `c.yaml:3: deadlines.produced: must not be empty`},
		{"rows not a mapping", "pipeline: p\nrows: 5\n", `c.yaml:2: rows: want a mapping of keys to values, got "5"`},
		{"unknown rows key", "pipeline: p\nrows:\n  max: 5\n", `c.yaml:3: rows.max: unknown key (want min, equal, header)`},
		{"negative min rows", "pipeline: p\nrows:\n  min: -1\n", `c.yaml:3: rows.min: -1: must not be negative`},
		{"min rows as text", "pipeline: p\nrows:\n  min: many\n", `c.yaml:3: rows.min: want a whole number, got "many"`},
		{"min rows as fraction", "pipeline: p\nrows:\n  min: 1.5\n", `c.yaml:3: rows.min: want a whole number, got "1.5"`},
		{"equal not a bool", "pipeline: p\nrows:\n  equal: sometimes\n", `c.yaml:3: rows.equal: want true or false, got "sometimes"`},
		{"unknown key and no pipeline", "schedul: daily\n", "c.yaml:1: schedul: unknown key (want pipeline, schedule, timezone, holidays, batch_id, artifact, signal, required, deadlines, rows, owner, severity, labels, signal_content, openlineage, reruns, allowed_lateness, for, upstreams)\nc.yaml:1: missing pipeline: every contract names its pipeline"},
		{"alias to the root", "&a [*a]\n", `c.yaml:1: want a mapping of keys to values, got a list`},
		{"several problems at once", "pipeline: p\nschedule: fortnightly\nrows:\n  min: -1\n",
			"c.yaml:2: schedule: unknown schedule \"fortnightly\" (want daily, weekdays, hourly or a cron expression such as \"30 6 * * 1-5\", or leave it out)\nc.yaml:4: rows.min: -1: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := contract.Parse("c.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse: got %+v, want error %q", c, tt.want)
			}
			if c != nil {
				t.Errorf("Parse returned a contract with an error")
			}
			if err.Error() != tt.want {
				t.Errorf("Parse error\n got %s\nwant %s", err, tt.want)
			}
			var pe *contract.ParseError
			if !errors.As(err, &pe) || pe.Source != "c.yaml" {
				t.Errorf("Parse error %T is not a *contract.ParseError for c.yaml", err)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	data := []byte("pipeline: p\n# " + strings.Repeat("x", contract.MaxFileSize) + "\n")
	_, err := contract.Parse("big.yaml", data)
	if err == nil || !strings.HasPrefix(err.Error(), "big.yaml: file of ") {
		t.Errorf("Parse of a %d-byte file: %v", len(data), err)
	}
}

func TestParseDeadline(t *testing.T) {
	tests := []struct {
		in   string
		want contract.Deadline
	}{
		{"+30m", contract.Deadline{Kind: contract.Relative, After: 30 * time.Minute, Text: "+30m"}},
		{"+ 1h30m", contract.Deadline{Kind: contract.Relative, After: 90 * time.Minute, Text: "+ 1h30m"}},
		{"business_date + 1d 06:00", contract.Deadline{Kind: contract.Absolute, Days: 1, TimeOfDay: 6 * time.Hour, Text: "business_date + 1d 06:00"}},
		{"business_date+1d 06:00", contract.Deadline{Kind: contract.Absolute, Days: 1, TimeOfDay: 6 * time.Hour, Text: "business_date+1d 06:00"}},
		{"business_date + 1 day 06:00", contract.Deadline{Kind: contract.Absolute, Days: 1, TimeOfDay: 6 * time.Hour, Text: "business_date + 1 day 06:00"}},
		{"business_date + 0d 23:59:59", contract.Deadline{Kind: contract.Absolute, TimeOfDay: 24*time.Hour - time.Second, Text: "business_date + 0d 23:59:59"}},
		{"business_date", contract.Deadline{Kind: contract.Absolute, Text: "business_date"}},
	}
	for _, tt := range tests {
		got, err := contract.ParseDeadline(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDeadline(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestSeedContract parses the seed case's contract from the repository and
// checks the deadlines the seed story depends on: the 2026-09-30 batch,
// stuck without a delivered signal, is overdue on 2026-10-03, while the
// 2026-09-29 batch met every deadline.
func TestSeedContract(t *testing.T) {
	mustLocation(t, "Asia/Shanghai")
	set, err := contract.LoadFS(os.DirFS("../../deploy/contracts"), ".")
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	const pipeline = "account-balance-snapshot.daily"
	c := set.For(pipeline)
	if c.IsDefault() {
		t.Fatalf("no contract for %s in deploy/contracts (have %v)", pipeline, set.Pipelines())
	}
	if c.Schedule != contract.Daily || c.Location.String() != "Asia/Shanghai" || c.Required != model.AllBoundaries {
		t.Errorf("schedule %q, zone %s, required %v", c.Schedule, c.Location, c.Required.List())
	}
	key := model.BatchKey{Pipeline: pipeline, BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	if got, _ := c.ArtifactName(key); got != "account_balance_snapshot_20260930.csv" {
		t.Errorf("ArtifactName = %q", got)
	}
	if got, _ := c.SignalName(key); got != "account_balance_snapshot_20260930.flag" {
		t.Errorf("SignalName = %q", got)
	}
	if got, _ := c.ExpectedBatchID(pipeline, key.BusinessDate); got != key.BatchID {
		t.Errorf("ExpectedBatchID = %q", got)
	}
	if prev, ok := c.Previous(key); !ok || prev.String() != pipeline+"/2026-09-29/20260929" {
		t.Errorf("Previous = %s, %v", prev, ok)
	}

	// Proven boundaries of each batch, as in deploy/demo/seed-case.jsonl.
	ms := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	proven0930 := map[model.Boundary]time.Time{
		model.Produced:    ms("2026-09-30T17:14:05.010Z"),
		model.Finalized:   ms("2026-09-30T17:14:02.480Z"),
		model.Signaled:    ms("2026-09-30T17:14:06.300Z"),
		model.Transferred: ms("2026-09-30T17:20:05.120Z"),
	}
	proven0929 := map[model.Boundary]time.Time{
		model.Produced:        ms("2026-09-29T17:14:05.010Z"),
		model.Finalized:       ms("2026-09-29T17:14:02.480Z"),
		model.Signaled:        ms("2026-09-29T17:14:06.300Z"),
		model.Transferred:     ms("2026-09-29T17:20:05.120Z"),
		model.SignalDelivered: ms("2026-09-29T17:20:07.900Z"),
		model.Identified:      ms("2026-09-29T17:25:00.000Z"),
		model.Consumed:        ms("2026-09-29T17:31:40.750Z"),
	}
	lookup := func(m map[model.Boundary]time.Time) contract.ProvenAt {
		return func(b model.Boundary) (time.Time, bool) { t, ok := m[b]; return t, ok }
	}
	due, ok := c.Due(model.SignalDelivered, key, lookup(proven0930), proven0930[model.Transferred])
	if want := ms("2026-09-30T22:00:00Z"); !ok || !due.Equal(want) {
		t.Errorf("signal_delivered of 2026-09-30 due %v, %v; want %v", due, ok, want)
	}
	if asOf := ms("2026-10-03T00:00:00Z"); !asOf.After(due) {
		t.Errorf("2026-09-30 batch not overdue as of %v (due %v)", asOf, due)
	}
	prevKey := model.BatchKey{Pipeline: pipeline, BusinessDate: model.MustParseDate("2026-09-29"), BatchID: "20260929"}
	for b, at := range proven0929 {
		due, ok := c.Due(b, prevKey, lookup(proven0929), proven0929[model.Consumed])
		if !ok || at.After(due) {
			t.Errorf("2026-09-29 %s proven at %v, after its deadline %v", b, at, due)
		}
	}
}

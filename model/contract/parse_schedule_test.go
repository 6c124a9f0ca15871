package contract_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

const hourlyContract = `pipeline: fx-rates.hourly
schedule: hourly
timezone: Europe/London
holidays: [2026-12-25, 2026-12-26]
batch_id: "{yyyymmdd}{hh}"
artifact: "fx_rates_{yyyymmdd}_{hh}00.csv"
signal: "fx_rates_{batch_id}.flag"
required: [produced, finalized, consumed]
deadlines:
  produced: "start + 90m"
  consumed: "+30m"
owner: treasury-data
severity: critical
labels:
  team: treasury
  runbook_url: https://runbooks.example/fx
`

func TestParseHourlyAndRouting(t *testing.T) {
	c, err := contract.Parse("fx.yaml", []byte(hourlyContract))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	key := model.BatchKey{Pipeline: "fx-rates.hourly", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "2026093007"}
	artifact, aok := c.ArtifactName(key)
	signal, sok := c.SignalName(key)
	checks := []struct {
		name      string
		got, want any
	}{
		{"Schedule", c.Schedule, contract.Hourly},
		{"Holidays", len(c.Holidays), 2},
		{"IsHoliday", c.IsHoliday(model.MustParseDate("2026-12-26")), true},
		{"not a holiday", c.IsHoliday(model.MustParseDate("2026-12-27")), false},
		{"produced", c.Deadlines[model.Produced], contract.Deadline{Kind: contract.AfterStart, After: 90 * time.Minute, Text: "start + 90m"}},
		{"artifact", artifact, "fx_rates_20260930_0700.csv"},
		{"artifact derives", aok, true},
		{"signal", signal, "fx_rates_2026093007.flag"},
		{"signal derives", sok, true},
		{"Owner", c.Owner, "treasury-data"},
		{"Severity", c.Severity, contract.SeverityCritical},
		{"Labels", len(c.Labels), 2},
		{"label team", c.Labels["team"], "treasury"},
		{"label runbook_url", c.Labels["runbook_url"], "https://runbooks.example/fx"},
		{"LabelNames", strings.Join(c.LabelNames(), ","), "runbook_url,team"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %+v, want %+v", ch.name, ch.got, ch.want)
		}
	}
	// The hour comes from the batch id: an id that does not name one has
	// no derived names, rather than wrong ones.
	if name, ok := c.ArtifactName(model.BatchKey{Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: "20260930"}); ok {
		t.Errorf("ArtifactName of a batch id without an hour = %q, want none", name)
	}
	if id, ok := c.ExpectedBatchID(key.Pipeline, key.BusinessDate); ok {
		t.Errorf("ExpectedBatchID of an hourly pipeline = %q, want none (the date does not say the hour)", id)
	}
}

func TestParseRoutingDefaults(t *testing.T) {
	c, err := contract.Parse("c.yaml", []byte("pipeline: p\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Owner != "" || c.Severity != contract.DefaultSeverity || c.Labels != nil || c.LabelNames() != nil {
		t.Errorf("routing defaults: owner %q, severity %q, labels %v", c.Owner, c.Severity, c.Labels)
	}
	if d := contract.Default("p"); d.Severity != contract.SeverityWarning {
		t.Errorf("Default severity %q, want warning", d.Severity)
	}
}

func TestParseCronSchedule(t *testing.T) {
	tests := []struct {
		name, schedule, batchID string
		wantID                  string // ExpectedBatchID for 2026-09-30, "" for none
	}{
		{"once a day: the date says which batch", `"30 6 * * 1-5"`, `"{yyyymmdd}"`, "20260930"},
		{"once a day with the time in the id", `"30 6 * * 1-5"`, `"{yyyymmdd}T{hh}{mi}"`, "20260930T0630"},
		{"several a day", `"0 */6 * * *"`, `"{yyyymmdd}{hh}"`, ""},
		{"a shorthand", "\"@daily\"", `"{yyyymmdd}"`, "20260930"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := contract.Parse("c.yaml", []byte("pipeline: p\nschedule: "+tt.schedule+"\nbatch_id: "+tt.batchID+"\n"))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if string(c.Schedule) != strings.Trim(tt.schedule, `"`) {
				t.Errorf("Schedule = %q", c.Schedule)
			}
			id, ok := c.ExpectedBatchID("p", model.MustParseDate("2026-09-30"))
			if !ok {
				id = ""
			}
			if id != tt.wantID {
				t.Errorf("ExpectedBatchID = %q, want %q", id, tt.wantID)
			}
		})
	}
}

func TestParseScheduleErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"bad cron field", "pipeline: p\nschedule: \"0 25 * * *\"\n",
			`c.yaml:2: schedule: cron "0 25 * * *": hour field "25": 25 out of range 0-23`},
		{"cron with seconds", "pipeline: p\nschedule: \"*/30 * * * * *\"\n",
			`c.yaml:2: schedule: cron "*/30 * * * * *": 6 fields: seconds are not supported, a schedule fires at most once a minute (want minute hour day-of-month month day-of-week)`},
		{"cron that never fires", "pipeline: p\nschedule: \"0 0 31 2 *\"\n",
			`c.yaml:2: schedule: cron "0 0 31 2 *": never fires: no month has that day`},
		{"hourly without batch_id", "pipeline: p\nschedule: hourly\n",
			`c.yaml:2: schedule: "hourly" fires in more than one hour of a day, so batch ids must name the hour: add batch_id: "{yyyymmdd}{hh}"`},
		{"cron minutes without batch_id", "pipeline: p\nschedule: \"0,30 6 * * *\"\n",
			`c.yaml:2: schedule: "0,30 6 * * *" fires at more than one minute of an hour, so batch ids must name the minute: add batch_id: "{yyyymmdd}{hh}{mi}"`},
		{"hourly batch_id without {hh}", "pipeline: p\nschedule: hourly\nbatch_id: \"{yyyymmdd}\"\n",
			`c.yaml:3: batch_id: "{yyyymmdd}": does not use {hh}, but schedule "hourly" fires in more than one hour of a day, so its batches would share ids (write "{yyyymmdd}{hh}")`},
		{"cron batch_id without {mi}", "pipeline: p\nschedule: \"*/15 * * * *\"\nbatch_id: \"{yyyymmdd}{hh}\"\n",
			`c.yaml:3: batch_id: "{yyyymmdd}{hh}": does not use {mi}, but schedule "*/15 * * * *" fires at more than one minute of an hour, so its batches would share ids (write "{yyyymmdd}{hh}{mi}")`},
		{"{hh} under a daily schedule", "pipeline: p\nschedule: daily\nartifact: \"x_{yyyymmdd}{hh}.csv\"\n",
			`c.yaml:3: artifact: "x_{yyyymmdd}{hh}.csv": {hh} and {mi} name the time of a firing, which needs schedule: hourly or a cron expression`},
		{"{hh} without a schedule", "pipeline: p\nbatch_id: \"{yyyymmdd}{hh}\"\n",
			`c.yaml:2: batch_id: "{yyyymmdd}{hh}": {hh} and {mi} name the time of a firing, which needs schedule: hourly or a cron expression`},
		{"start deadline without a schedule", "pipeline: p\ndeadlines:\n  produced: \"start + 1h\"\n",
			`c.yaml:3: deadlines.produced: "start + 1h": a batch has a start only under a schedule: add schedule: or use "business_date + 1d 06:00"`},
		{"start deadline without +", "pipeline: p\nschedule: daily\ndeadlines:\n  produced: \"start 1h\"\n",
			`c.yaml:4: deadlines.produced: "start 1h": want a duration after the batch's start, as in "start + 90m"`},
		{"start deadline in days", "pipeline: p\nschedule: daily\ndeadlines:\n  produced: \"start + 1d\"\n",
			`c.yaml:4: deadlines.produced: "start + 1d": unknown unit "d" in duration (durations stop at hours: write +24h)`},
		{"holidays without a schedule", "pipeline: p\nholidays: [2026-10-01]\n",
			`c.yaml:2: holidays: holidays remove dates from a schedule, and this contract has none: add schedule: or drop holidays`},
		{"bad inline holiday", "pipeline: p\nschedule: daily\nholidays:\n  - 2026-10-01\n  - 2026-02-30\n",
			`c.yaml:5: holidays: "2026-02-30": day out of range`},
		{"holiday as a mapping", "pipeline: p\nschedule: daily\nholidays: {a: b}\n",
			`c.yaml:3: holidays: want a list of dates such as [2026-10-01] or the path of a file of dates, got a mapping`},
		{"holidays file without a file system", "pipeline: p\nschedule: daily\nholidays: cn.txt\n",
			`c.yaml:3: holidays: "cn.txt": a holidays file is read beside the contract: load contracts with LoadFS`},
		{"unknown severity", "pipeline: p\nseverity: page\n",
			`c.yaml:2: severity: unknown severity "page" (want critical, warning or info)`},
		{"owner on two lines", "pipeline: p\nowner: \"a\\nb\"\n",
			`c.yaml:2: owner: "a\nb": must be one line of printable text`},
		{"labels not a mapping", "pipeline: p\nlabels: [a]\n",
			`c.yaml:2: labels: want a mapping of keys to values, got a list`},
		{"bad label name", "pipeline: p\nlabels:\n  team-name: x\n",
			`c.yaml:3: labels.team-name: bad label name: want letters, digits and _, not starting with a digit ([a-zA-Z_][a-zA-Z0-9_]*)`},
		{"label name with a digit first", "pipeline: p\nlabels:\n  1team: x\n",
			`c.yaml:3: labels.1team: bad label name: want letters, digits and _, not starting with a digit ([a-zA-Z_][a-zA-Z0-9_]*)`},
		{"label reserved by Prometheus", "pipeline: p\nlabels:\n  __name__: x\n",
			`c.yaml:3: labels.__name__: label names starting with __ are reserved by Prometheus`},
		{"label handoff sets", "pipeline: p\nlabels:\n  severity: x\n",
			`c.yaml:3: labels.severity: handoff sets this label itself (reserved: alertname, pipeline, batch, business_date, batch_id, boundary, kind, status, verdict, severity, owner); use the contract's own key or another name`},
		{"label value a list", "pipeline: p\nlabels:\n  team: [a]\n",
			`c.yaml:3: labels.team: want a string, got a list`},
		{"duplicate label", "pipeline: p\nlabels:\n  team: a\n  team: b\n",
			`c.yaml:4: labels.team: duplicate key (first set at line 3)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := contract.Parse("c.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse: got %+v, want error %q", c, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse error\n got %s\nwant %s", err, tt.want)
			}
			var pe *contract.ParseError
			if !errors.As(err, &pe) || pe.Line == 0 {
				t.Errorf("error %v is not a located *ParseError", err)
			}
		})
	}
}

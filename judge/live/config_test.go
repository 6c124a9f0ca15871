package live_test

import (
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/model"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	base := map[string]string{"HANDOFF_KAFKA_BROKERS": "127.0.0.1:9092", "HANDOFF_CLICKHOUSE_ADDR": "127.0.0.1:9000"}
	c, err := live.LoadConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Topic != "handoff.events" || c.FindingsTopic != "handoff.findings" || c.Group != "handoff-detect" ||
		c.IngestGroup != "handoff-ingest" || c.ResultsGroup != "handoff-ingest-results" || c.Tick != 250*time.Millisecond || c.Instance == "" {
		t.Fatalf("defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	tests := []struct {
		change func(*live.Config)
		say    string
	}{
		{func(c *live.Config) { c.Kafka.Brokers = nil }, "--kafka-brokers (HANDOFF_KAFKA_BROKERS): required"},
		{func(c *live.Config) { c.Kafka.Brokers = []string{"127.0.0.1:99999"} }, "--kafka-brokers"},
		{func(c *live.Config) { c.FindingsTopic = "bad topic!" }, "--findings-topic"},
		{func(c *live.Config) { c.Group = c.IngestGroup }, "must differ from handoff ingest's group"},
		{func(c *live.Config) { c.ClickHouse.Addr = "" }, "--clickhouse-addr (HANDOFF_CLICKHOUSE_ADDR): empty"},
		{func(c *live.Config) { c.ClickHouse.Database = "db.events FINAL --" }, "--clickhouse-database"},
		{func(c *live.Config) { c.ExpectFrom = "2026-13-01" }, "--expect-from"},
		{func(c *live.Config) { c.Tick = 0 }, "--tick"},
		{func(c *live.Config) { c.Heartbeat = -time.Second }, "--heartbeat"},
		{func(c *live.Config) { c.RetainDays = 0 }, "--retain-days"},
		{func(c *live.Config) { c.Now = "2026-10-03" }, "--now"},
		// 0001-01-01 overflowed the clock offset to 1734.
		{func(c *live.Config) { c.Now = "0001-01-01T00:00:00Z" }, "--now \"0001-01-01T00:00:00Z\": out of range"},
	}
	for _, tt := range tests {
		c, _ := live.LoadConfig(base)
		tt.change(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.say) {
			t.Errorf("Validate() = %v, want an error saying %q", err, tt.say)
		}
	}
}

func TestExpectFromDate(t *testing.T) {
	now := time.Date(2026, 10, 2, 23, 0, 0, 0, time.UTC)
	for in, want := range map[string]model.Date{
		"off":        {},
		"today":      model.MustParseDate("2026-10-02"),
		"yesterday":  model.MustParseDate("2026-10-01"),
		"2026-09-29": model.MustParseDate("2026-09-29"),
	} {
		c := live.Config{ExpectFrom: in}
		got, err := c.ExpectFromDate(now)
		if err != nil || got != want {
			t.Errorf("ExpectFrom %q: %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestClockStartsAtNow(t *testing.T) {
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := func() time.Time { return wall }
	c := live.Config{}
	if clock, err := c.Clock(tick); err != nil || !clock().Equal(wall) {
		t.Fatalf("without --now: err %v; want the wall clock", err)
	}
	c.Now = "2026-10-03T00:00:00Z"
	clock, err := c.Clock(tick)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	if got := clock(); !got.Equal(start) {
		t.Fatalf("at start: %v, want %v", got, start)
	}
	wall = wall.Add(90 * time.Second)
	if got := clock(); !got.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("90s later: %v, want %v (the clock runs at the wall clock's pace)", got, start.Add(90*time.Second))
	}
}

// TestExpectFromBeforeRetention: a calendar start before the retention
// window is an error that says where the window starts and what to give,
// measured on the detector's clock (--now), not the machine's.
func TestExpectFromBeforeRetention(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		from    string
		retain  int
		wantErr string
	}{
		{"2026-10-27", 35, ""},
		{"2026-10-26", 35, "--expect-from 2026-10-26 is before the retention window: with --retain-days 35 the detector remembers business dates from 2026-10-27 on (as of 2026-12-01)"},
		{"2026-09-29", 35, "give --expect-from 2026-10-27 or later, or --retain-days 63 to reach back to 2026-09-29"},
		{"2026-09-29", 63, ""},
		{"2026-09-29", 0, "--retain-days 35"}, // 0: the detector's default
		{"yesterday", 1, ""},
		{"off", 1, ""},
	}
	for _, tt := range tests {
		c := live.Config{ExpectFrom: tt.from, RetainDays: tt.retain}
		_, err := c.ExpectFromDate(now)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s, %d days: %v, want no error", tt.from, tt.retain, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s, %d days: %v, want an error saying %q", tt.from, tt.retain, err, tt.wantErr)
		}
	}
	base := map[string]string{"HANDOFF_KAFKA_BROKERS": "127.0.0.1:9092", "HANDOFF_CLICKHOUSE_ADDR": "127.0.0.1:9000",
		"HANDOFF_DETECT_EXPECT_FROM": "2026-09-29", "HANDOFF_DETECT_NOW": "2026-10-03T00:00:00Z"}
	c, err := live.LoadConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("--expect-from inside the window of --now: %v", err)
	}
	c.Now = "2027-01-03T00:00:00Z"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "before the retention window") {
		t.Errorf("--expect-from before the window of --now: %v, want the retention error", err)
	}
}

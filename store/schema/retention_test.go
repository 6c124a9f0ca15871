package schema_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

func TestRetentionCutoff(t *testing.T) {
	tests := []struct {
		now    string
		months int
		want   string
	}{
		{"2026-11-30T13:00:00Z", 0, "2026-11-01"},
		{"2026-11-30T13:00:00Z", 13, "2025-10-01"},
		{"2026-01-01T00:00:00Z", 1, "2025-12-01"},
		{"2026-03-31T23:59:59+02:00", 2, "2026-01-01"}, // 21:59 UTC, still March
	}
	for _, tt := range tests {
		now, _ := time.Parse(time.RFC3339, tt.now)
		if got := schema.RetentionCutoff(now, tt.months).Format(time.DateOnly); got != tt.want {
			t.Errorf("RetentionCutoff(%s, %d) = %s, want %s", tt.now, tt.months, got, tt.want)
		}
	}
}

// TestDropPartitionsBefore: months before the cutoff go, the cutoff's month
// and later stay, and so do the heartbeats (partition 197001).
func TestDropPartitionsBefore(t *testing.T) {
	d := storetest.NewDB(t, "retention")
	conn, db := d.Conn, d.Name
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	ev, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".events (pipeline, business_date, batch_id, event_id, time_ms)")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][3]string{{"2025-09-30", "a", "e1"}, {"2025-10-31", "b", "e2"}, {"2025-11-01", "c", "e3"}, {"1970-01-01", "", "hb"}} {
		if err := ev.Append("p", day(r[0]), r[1], r[2], int64(0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.Send(); err != nil {
		t.Fatal(err)
	}
	fb, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".findings_v2 (pipeline, business_date, batch_id, fingerprint, seq, state)")
	if err != nil {
		t.Fatal(err)
	}
	if err := fb.Append("p", day("2025-10-31"), "b", "f", uint32(1), "open"); err != nil {
		t.Fatal(err)
	}
	if err := fb.Send(); err != nil {
		t.Fatal(err)
	}
	cutoff := time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)
	dropped, err := schema.DropPartitionsBefore(ctx, conn, db, schema.Layout{}, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"events/202509", "events/202510", "events_by_date/202509", "events_by_date/202510", "findings_v2/202510"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	var left []string
	rows, err := conn.Query(ctx, "SELECT event_id FROM "+db+".events ORDER BY event_id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	rows.Close()
	if want := []string{"e3", "hb"}; !slices.Equal(left, want) {
		t.Errorf("events left %v, want %v", left, want)
	}
	again, err := schema.DropPartitionsBefore(ctx, conn, db, schema.Layout{}, cutoff)
	if err != nil || len(again) != 0 {
		t.Errorf("second run dropped %v, %v; want nothing", again, err)
	}
}

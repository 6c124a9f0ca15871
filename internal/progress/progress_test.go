package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLine(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		terminal    bool
		total, done int64
		elapsed     time.Duration
		want        string
	}{
		{"lines", false, 4_000_000, 1_000_000, 5 * time.Second,
			"backfill: 1,000,000/4,000,000 events (25%), 200,000 events/s, ETA 15s"},
		{"at the start", false, 4_000_000, 0, 0,
			"backfill: 0/4,000,000 events (0%)"},
		{"no progress yet", false, 4_000_000, 0, time.Second,
			"backfill: 0/4,000,000 events (0%), 0 events/s"},
		{"unknown total", false, 0, 1_234_567, 2 * time.Second,
			"backfill: 1,234,567 events, 617,284 events/s"},
		{"long ETA", false, 1_000_000_000, 1_000_000, 10 * time.Second,
			"backfill: 1,000,000/1,000,000,000 events (0%), 100,000 events/s, ETA 2h46m"},
		{"minutes", false, 1_000, 100, 10 * time.Second,
			"backfill: 100/1,000 events (10%), 10 events/s, ETA 1m30s"},
		{"done", false, 500, 500, 4 * time.Second,
			"backfill: 500/500 events (100%), 125 events/s, done in 4s"},
		{"over the total", false, 500, 600, 4 * time.Second,
			"backfill: 600/500 events (100%), 150 events/s, done in 4s"},
		{"bar", true, 4_000_000, 1_000_000, 5 * time.Second,
			"backfill [#####...............] 1,000,000/4,000,000 events (25%), 200,000 events/s, ETA 15s"},
		{"bar full", true, 10, 10, time.Second,
			"backfill [####################] 10/10 events (100%), 10 events/s, done in 1s"},
		{"bar, unknown total", true, 0, 7, time.Second,
			"backfill: 7 events, 7 events/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t0}
			r := New(&bytes.Buffer{}, "backfill", "events", tt.total, Options{Terminal: tt.terminal, Now: c.now, Width: 20})
			r.Add(tt.done)
			c.t = t0.Add(tt.elapsed)
			if got := r.Line(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRenderInPlace(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := &clock{t0}
	var out bytes.Buffer
	r := New(&out, "backfill", "events", 0, Options{Terminal: true, Now: c.now})
	r.Add(1_000_000)
	c.t = t0.Add(time.Second)
	r.Render() // "backfill: 1,000,000 events, 1,000,000 events/s"
	c.t = t0.Add(1000 * time.Second)
	r.Render() // shorter: "backfill: 1,000,000 events, 1,000 events/s"
	r.Stop()
	want := "\rbackfill: 1,000,000 events, 1,000,000 events/s" +
		"\rbackfill: 1,000,000 events, 1,000 events/s    " +
		"\rbackfill: 1,000,000 events, 1,000 events/s\n"
	if out.String() != want {
		t.Errorf("got  %q\nwant %q", out.String(), want)
	}
	if strings.Count(out.String(), "\n") != 1 {
		t.Error("a terminal bar must end with exactly one newline")
	}
}

// syncBuffer is a bytes.Buffer safe for the drawing goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStartStop runs the drawing goroutine on synctest's fake clock: a
// line per interval while work goes on, a final line at Stop, and no
// goroutine left afterwards (synctest.Test fails if one is).
func TestStartStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		r := New(&out, "backfill", "batches", 1000, Options{Interval: 10 * time.Second})
		r.Start()
		for i := 0; i < 5; i++ {
			r.Add(100)
			time.Sleep(10 * time.Second) // fake time: one interval
			synctest.Wait()
		}
		r.Stop()
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		want := []string{
			"backfill: 100/1,000 batches (10%), 10 batches/s, ETA 1m30s",
			"backfill: 200/1,000 batches (20%), 10 batches/s, ETA 1m20s",
			"backfill: 300/1,000 batches (30%), 10 batches/s, ETA 1m10s",
			"backfill: 400/1,000 batches (40%), 10 batches/s, ETA 1m00s",
			"backfill: 500/1,000 batches (50%), 10 batches/s, ETA 50s",
			"backfill: 500/1,000 batches (50%), 10 batches/s, ETA 50s", // Stop's final line
		}
		if strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
	})
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestDetail: a second count is drawn after the first, and an empty one
// leaves the line as it was.
func TestDetail(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := &clock{t0}
	detail := "1,234 batches"
	r := New(&bytes.Buffer{}, "backfill", "events", 1000, Options{Now: c.now, Detail: func() string { return detail }})
	r.Add(250)
	c.t = t0.Add(time.Second)
	if got, want := r.Line(), "backfill: 250/1,000 events (25%), 1,234 batches, 250 events/s, ETA 3s"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	detail = ""
	if got, want := r.Line(), "backfill: 250/1,000 events (25%), 250 events/s, ETA 3s"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// Package progress reports how far long work has got (a backfill over
// months of batches): on a terminal a bar redrawn in place with the rate
// and the time left; elsewhere (a log file, CI, a pipe) plain lines at an
// interval, such as
//
//	backfill: 1,234,567/4,000,000 events (31%), 210,000 events/s, ETA 13s
//
// because carriage returns and escape codes make unreadable logs.
//
// The work reports with Add from any goroutine; Start draws in a goroutine
// of its own until Stop, which waits for it, so no goroutine outlives the
// reporter. The clock is injected (Options.Now) and Render draws on demand,
// so the output is testable without waiting.
package progress

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune a Reporter. The zero value is usable.
type Options struct {
	// Terminal draws a bar redrawn in place (see IsTerminal); otherwise
	// plain lines.
	Terminal bool
	// Interval between two draws by Start: default 200 ms on a terminal,
	// 10 s otherwise.
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Width is the bar's width in characters on a terminal (default 30).
	Width int
	// Detail, when set, adds what it returns after the count (for
	// example "12,345 batches": a second count beside the unit the rate
	// and ETA are computed in). It is called at every draw.
	Detail func() string
}

// Reporter reports the progress of one piece of work.
type Reporter struct {
	w     io.Writer
	label string
	unit  string
	total atomic.Int64
	done  atomic.Int64
	opts  Options
	start time.Time

	mu       sync.Mutex // serialises drawing
	lastLen  int        // length of the last line drawn in place
	stop     chan struct{}
	finished chan struct{}
}

// New returns a reporter of work named label (e.g. "backfill") counted in
// unit (e.g. "events"), total units in all (0 when unknown: no percentage
// or ETA), starting now.
func New(w io.Writer, label, unit string, total int64, opts Options) *Reporter {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
		if opts.Terminal {
			opts.Interval = 200 * time.Millisecond
		}
	}
	if opts.Width <= 0 {
		opts.Width = 30
	}
	r := &Reporter{w: w, label: label, unit: unit, opts: opts, start: opts.Now()}
	r.total.Store(total)
	return r
}

// IsTerminal reports whether f is a terminal (a character device), the
// case for a bar rather than lines.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Add counts n more units done. Safe for concurrent use.
func (r *Reporter) Add(n int64) { r.done.Add(n) }

// SetTotal changes the total (when it becomes known while working).
func (r *Reporter) SetTotal(n int64) { r.total.Store(n) }

// Start draws every Interval until Stop. Call it at most once.
func (r *Reporter) Start() {
	r.stop = make(chan struct{})
	r.finished = make(chan struct{})
	go func() {
		defer close(r.finished)
		t := time.NewTicker(r.opts.Interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.Render()
			case <-r.stop:
				return
			}
		}
	}()
}

// Stop ends the drawing goroutine (waiting for it) and draws the final
// state, ending the line on a terminal. Call it once, after Start or
// without it.
func (r *Reporter) Stop() {
	if r.stop != nil {
		close(r.stop)
		<-r.finished
	}
	r.Render()
	if r.opts.Terminal {
		r.mu.Lock()
		io.WriteString(r.w, "\n")
		r.mu.Unlock()
	}
}

// Render draws the current state once: a line, or the bar in place.
func (r *Reporter) Render() {
	line := r.Line()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.opts.Terminal {
		io.WriteString(r.w, line+"\n")
		return
	}
	// Back to the line's start, and blank what a longer previous line left.
	pad := ""
	if n := r.lastLen - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	r.lastLen = len(line)
	io.WriteString(r.w, "\r"+line+pad)
}

// Line returns the current state as one line, with a bar on a terminal.
func (r *Reporter) Line() string {
	done, total := r.done.Load(), r.total.Load()
	elapsed := r.opts.Now().Sub(r.start)
	var b strings.Builder
	b.WriteString(r.label)
	if r.opts.Terminal && total > 0 {
		filled := int(min(done, total) * int64(r.opts.Width) / total)
		b.WriteString(" [" + strings.Repeat("#", filled) + strings.Repeat(".", r.opts.Width-filled) + "]")
	} else {
		b.WriteByte(':')
	}
	b.WriteString(" " + Thousands(done))
	if total > 0 {
		b.WriteString("/" + Thousands(total))
	}
	b.WriteString(" " + r.unit)
	if total > 0 {
		fmt.Fprintf(&b, " (%d%%)", min(done, total)*100/total)
	}
	if r.opts.Detail != nil {
		if d := r.opts.Detail(); d != "" {
			b.WriteString(", " + d)
		}
	}
	if elapsed > 0 {
		rate := float64(done) / elapsed.Seconds()
		b.WriteString(", " + Thousands(int64(rate+0.5)) + " " + r.unit + "/s")
		if total > 0 && done < total && rate > 0 {
			eta := time.Duration(float64(total-done) / rate * float64(time.Second))
			b.WriteString(", ETA " + ETA(eta))
		}
	}
	if total > 0 && done >= total {
		b.WriteString(", done in " + ETA(elapsed))
	}
	return b.String()
}

// Thousands writes n with commas between groups of three digits.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ETA writes a duration to the second, short: 13s, 2m05s, 1h02m (hours
// drop the seconds: at that range they only flicker).
func ETA(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

package findings

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// WriteText writes res for a person: a header, one aligned line per
// finding in the order read, and a summary line (Summary). state is the
// filter's (a STATE column only when it is "", both states; a RESOLVED
// column only when a resolved finding is shown). Times are UTC to the
// second; LATE is Late(now). With no finding it writes the summary only.
func WriteText(w io.Writer, res Result, state string, now time.Time) error {
	bw := bufio.NewWriter(w)
	if len(res.Findings) > 0 {
		resolved := false
		for i := range res.Findings {
			resolved = resolved || res.Findings[i].State != StateOpen
		}
		cols := []string{"BUSINESS_DATE", "PIPELINE", "BATCH", "KIND", "BOUNDARY", "VERDICT", "STATUS"}
		if state == "" {
			cols = append(cols, "STATE")
		}
		cols = append(cols, "OPENED", "DUE", "LATE")
		if resolved {
			cols = append(cols, "RESOLVED")
		}
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
		for i := range res.Findings {
			f := &res.Findings[i]
			// An overdue or failed finding is about its own boundary (its
			// name); the diagnosis it carries may have moved on since, as
			// when a resolved finding's batch now stalls further down.
			boundary := f.FirstMissing
			if f.Kind == "overdue" || f.Kind == "failed" || boundary == "" {
				boundary = f.Name
			}
			line := []string{f.BusinessDate, f.Pipeline, f.BatchID, f.Kind, dash(boundary), dash(f.Verdict), dash(f.Status)}
			if state == "" {
				line = append(line, f.State)
			}
			line = append(line, stamp(&f.RaisedAt), stamp(f.Deadline), late(f.Late(now)))
			if resolved {
				line = append(line, stamp(f.ResolvedAt))
			}
			for i := range line {
				line[i] = model.EscapeText(line[i]) // before the tabwriter, which aligns what is printed
			}
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(bw, model.EscapeText(Summary(res, state)))
	return bw.Flush()
}

// Summary is the one-line account of res read with state filter state
// ("" or all: both): "3 open findings, 2 pipelines", "no open findings",
// "4 findings (3 open, 1 resolved), 2 pipelines", and when truncated what
// was left out.
func Summary(res Result, state string) string {
	open, pipelines := 0, map[string]bool{}
	for i := range res.Findings {
		if res.Findings[i].State == StateOpen {
			open++
		}
		pipelines[res.Findings[i].Pipeline] = true
	}
	n := len(res.Findings)
	var s string
	switch {
	case n == 0 && (state == StateOpen || state == StateResolved):
		s = "no " + state + " findings"
	case n == 0:
		s = "no findings"
	case state == StateOpen || state == StateResolved:
		s = fmt.Sprintf("%s, %s", count(n, state+" finding"), count(len(pipelines), "pipeline"))
	default:
		s = fmt.Sprintf("%s (%d open, %d resolved), %s", count(n, "finding"), open, n-open, count(len(pipelines), "pipeline"))
	}
	if res.Truncated {
		s += fmt.Sprintf("; more match: these are the first %d (narrow the filters or raise the limit)", n)
	}
	return s
}

// count is "1 finding", "2 findings".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// stamp is a time for the table: UTC to the second, "-" for none.
func stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// late is a lateness for the table, "-" when not late.
func late(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return replay.FormatDuration(d)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSON writes res as one JSON object, one finding per line:
// {"count":N,"truncated":false,"findings":[...]}. As everywhere in
// handoff's JSON, <, > and & are not HTML-escaped.
func WriteJSON(w io.Writer, res Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"count\":%d,\"truncated\":%t,\"findings\":[", len(res.Findings), res.Truncated)
	if err := writeLines(bw, res, ","); err != nil {
		return err
	}
	if len(res.Findings) > 0 {
		bw.WriteByte('\n')
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// WriteJSONL writes res as JSON lines, one finding per line (and nothing
// for none).
func WriteJSONL(w io.Writer, res Result) error {
	bw := bufio.NewWriter(w)
	if err := writeLines(bw, res, ""); err != nil {
		return err
	}
	if len(res.Findings) > 0 {
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// writeLines writes each finding of res as compact JSON on a line of its
// own: sep, a newline, the finding (no newline after the last).
func writeLines(bw *bufio.Writer, res Result, sep string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range res.Findings {
		buf.Reset()
		if err := enc.Encode(&res.Findings[i]); err != nil {
			return fmt.Errorf("finding %s as JSON: %w", res.Findings[i].Fingerprint, err)
		}
		if i > 0 {
			bw.WriteString(sep)
			bw.WriteByte('\n')
		} else if sep != "" {
			bw.WriteByte('\n')
		}
		bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	return nil
}

package findings

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// Times say how a listing writes times.
type Times struct {
	// AsOf is the time the lateness of open findings is counted to
	// (Late); zero keeps the recorded lateness.
	AsOf time.Time
	// Zone gives the zone shown beside UTC for a pipeline's times; nil,
	// or a nil zone, shows UTC alone.
	Zone func(pipeline string) *time.Location
}

func (t Times) zone(pipeline string) *time.Location {
	if t.Zone == nil {
		return nil
	}
	return t.Zone(pipeline)
}

// WriteText writes res for a person: a header, one aligned line per
// finding in the order read, and a summary line (Summary). state is the
// filter's (a STATE column only when it is "", both states; a RESOLVED
// column only when a resolved finding is shown; a RESOLUTION column only
// when one of them ended other than the plain way, Resolution). Times are UTC with the
// pipeline's zone beside them (model.HumanTime); LATE is Late(tm.AsOf),
// the lateness WriteJSON writes. With no finding it writes the summary
// only.
func WriteText(w io.Writer, res Result, state string, tm Times) error {
	bw := bufio.NewWriter(w)
	if len(res.Findings) > 0 {
		resolved, ended := false, false
		for i := range res.Findings {
			resolved = resolved || res.Findings[i].State != StateOpen
			ended = ended || Resolution(&res.Findings[i]) != ""
		}
		cols := []string{"BUSINESS_DATE", "PIPELINE", "BATCH", "KIND", "BOUNDARY", "VERDICT", "STATUS"}
		if state == "" {
			cols = append(cols, "STATE")
		}
		cols = append(cols, "OPENED", "DUE", "LATE")
		if resolved {
			cols = append(cols, "RESOLVED")
		}
		if ended {
			cols = append(cols, "RESOLUTION")
		}
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
		for i := range res.Findings {
			f := &res.Findings[i]
			// An overdue or failed finding is about its own boundary (its
			// name); the diagnosis it carries may have moved on since, as
			// when a resolved finding's batch now stalls further down.
			boundary := f.Diagnosis.FirstMissing
			if f.Kind == detect.Overdue || f.Kind == detect.Failed || boundary == "" {
				boundary = f.Name
			}
			line := []string{f.Batch.BusinessDate.String(), f.Batch.Pipeline, f.Batch.BatchID, string(f.Kind), dash(boundary), dash(f.Verdict), dash(string(f.Status))}
			if state == "" {
				line = append(line, string(f.State))
			}
			loc := tm.zone(f.Batch.Pipeline)
			line = append(line, stamp(f.RaisedAt, loc), stamp(f.Deadline, loc), late(Late(f, tm.AsOf)))
			if resolved {
				line = append(line, stamp(f.ResolvedAt, loc))
			}
			if ended {
				line = append(line, dash(Resolution(f)))
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
		pipelines[res.Findings[i].Batch.Pipeline] = true
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

// stamp is a time for the table: UTC and the zone loc, "-" for none.
func stamp(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return model.HumanTime(t, loc)
}

// Resolution says in a few words how a resolved finding ended when it did
// not end the plain way, as the text listing and the serve pages show it:
// "superseded by 20260919-r2" (the attempt of the same date that speaks
// for it, by batch id), "on time, reported late by 3m" (its evidence was
// on time by its own event time but reached the detector after the
// deadline), or the detector's own words for any other; "" otherwise.
// The record's exact words are in the JSON's resolution.
func Resolution(f *detect.Finding) string {
	switch {
	case f.SupersededBy != "":
		if k, err := model.ParseBatchKey(f.SupersededBy); err == nil {
			return "superseded by " + k.BatchID
		}
		return "superseded by " + f.SupersededBy
	case f.ReportingDelay > 0:
		return "on time, reported late by " + replay.FormatDuration(f.ReportingDelay)
	}
	return f.Resolution
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
// {"count":N,"truncated":false,"findings":[...]}, the lateness of open
// findings counted to asOf (AppendJSON). As everywhere in handoff's JSON,
// <, > and & are not HTML-escaped.
func WriteJSON(w io.Writer, res Result, asOf time.Time) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"count\":%d,\"truncated\":%t,\"findings\":[", len(res.Findings), res.Truncated)
	if err := writeLines(bw, res, ",", asOf); err != nil {
		return err
	}
	if len(res.Findings) > 0 {
		bw.WriteByte('\n')
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// WriteJSONL writes res as JSON lines, one finding per line (and nothing
// for none), the lateness of open findings counted to asOf.
func WriteJSONL(w io.Writer, res Result, asOf time.Time) error {
	bw := bufio.NewWriter(w)
	if err := writeLines(bw, res, "", asOf); err != nil {
		return err
	}
	if len(res.Findings) > 0 {
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// writeLines writes each finding of res as compact JSON on a line of its
// own: sep, a newline, the finding (no newline after the last).
func writeLines(bw *bufio.Writer, res Result, sep string, asOf time.Time) error {
	var buf []byte
	for i := range res.Findings {
		buf = AppendJSON(buf[:0], &res.Findings[i], asOf)
		if i > 0 {
			bw.WriteString(sep)
			bw.WriteByte('\n')
		} else if sep != "" {
			bw.WriteByte('\n')
		}
		bw.Write(buf)
	}
	return nil
}

// AppendJSON appends f as the listings show it (`handoff findings
// --format json`, the serve API): one compact object of the latest
// record's fields, without labels and diagnosis (of which first_missing
// is kept), times in RFC 3339 UTC with milliseconds (model.AppendTime),
// resolved_at and deadline left out when none. lateness_ms is Late(f,
// asOf), what the text listing shows: for an open finding with a deadline
// counted to asOf, which lateness_as_of then gives; otherwise the recorded
// lateness. reporting_delay_ms, resolution and superseded_by are the
// record's, left out when none, as on the findings topic. As everywhere in handoff's JSON, <, > and & are not
// HTML-escaped.
func AppendJSON(b []byte, f *detect.Finding, asOf time.Time) []byte {
	b = append(b, `{"fingerprint":`...)
	b = model.AppendJSONString(b, f.Fingerprint)
	for _, kv := range [...]struct{ k, v string }{
		{"batch", f.Batch.String()}, {"pipeline", f.Batch.Pipeline}, {"business_date", f.Batch.BusinessDate.String()},
		{"batch_id", f.Batch.BatchID}, {"state", string(f.State)}, {"kind", string(f.Kind)}, {"name", f.Name},
	} {
		b = appendKey(b, kv.k)
		b = model.AppendJSONString(b, kv.v)
	}
	b = appendKey(b, "seq")
	b = strconv.AppendInt(b, int64(f.Seq), 10)
	b = appendTime(b, "raised_at", f.RaisedAt)
	if !f.ResolvedAt.IsZero() {
		b = appendTime(b, "resolved_at", f.ResolvedAt)
	}
	if !f.Deadline.IsZero() {
		b = appendTime(b, "deadline", f.Deadline)
	}
	b = appendKey(b, "lateness_ms")
	b = strconv.AppendInt(b, Late(f, asOf).Milliseconds(), 10)
	if countedTo(f, asOf) {
		b = appendTime(b, "lateness_as_of", asOf)
	}
	if f.ReportingDelay != 0 {
		b = appendKey(b, "reporting_delay_ms")
		b = strconv.AppendInt(b, f.ReportingDelay.Milliseconds(), 10)
	}
	for _, kv := range [...]struct{ k, v string }{{"resolution", f.Resolution}, {"superseded_by", f.SupersededBy}} {
		if kv.v != "" {
			b = appendKey(b, kv.k)
			b = model.AppendJSONString(b, kv.v)
		}
	}
	b = appendTime(b, "evidence_as_of", f.EvidenceAsOf)
	for _, kv := range [...]struct{ k, v string }{
		{"severity", f.Severity}, {"owner", f.Owner}, {"status", string(f.Status)}, {"verdict", f.Verdict},
		{"first_missing", f.Diagnosis.FirstMissing},
	} {
		b = appendKey(b, kv.k)
		b = model.AppendJSONString(b, kv.v)
	}
	return append(b, '}')
}

func appendKey(b []byte, k string) []byte {
	b = append(b, ',', '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

// appendTime appends "k":"t" with t in RFC 3339 UTC with exactly three
// fractional digits, as every handoff JSON time.
func appendTime(b []byte, k string, t time.Time) []byte {
	b = appendKey(b, k)
	b = append(b, '"')
	b = model.AppendTime(b, t)
	return append(b, '"')
}

package serve

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/report"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/findings"
)

// The pages are plain HTML templates and one stylesheet, embedded: no build
// step, no JavaScript.
//
//go:embed web
var webFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	// batchLink is the page of a batch named by its key ("" when the key
	// does not parse): the links of a blocked batch to its upstreams.
	"batchLink": func(batch string) string {
		k, err := model.ParseBatchKey(batch)
		if err != nil {
			return ""
		}
		return batchPath(k)
	},
	// incidentLink is the incident page of a root batch named by its key
	// ("" when the key does not parse).
	"incidentLink": func(batch string) string {
		k, err := model.ParseBatchKey(batch)
		if err != nil {
			return ""
		}
		return incidentPath(k)
	},
	// fmtTime shows a time in UTC with the zone given (the contract's)
	// beside it, as the text reports do (model.HumanTime); none: UTC alone.
	"fmtTime": func(v any, zone ...*time.Location) string {
		var t time.Time
		switch v := v.(type) {
		case time.Time:
			t = v
		case *time.Time:
			if v != nil {
				t = *v
			}
		}
		if t.IsZero() {
			return ""
		}
		var loc *time.Location
		if len(zone) > 0 {
			loc = zone[0]
		}
		return model.HumanTime(t, loc)
	},
	"age": func(secs int64) string { return replay.FormatDuration(time.Duration(secs) * time.Second) },
}).ParseFS(webFS, "web/*.html"))

func (s *Server) pageRoutes() {
	s.mux.HandleFunc("GET /static/{file}", staticFile)
	s.handle("GET /{$}", "page_grid", s.gridPage)
	s.handle("GET /batches/{pipeline}/{date}/{id}", "page_batch", s.batchPage)
	s.handle("GET /incidents/{pipeline}/{date}/{id}", "page_incident", s.incidentPage)
	s.handle("GET /findings", "page_findings", s.findingsPage)
}

// staticFiles are the files under /static/: the stylesheet, and nothing
// else. No directory listing, and not the templates (web/*.html), which
// a file server over web/ would hand out.
var staticFiles = map[string]string{"style.css": "text/css; charset=utf-8"}

func staticFile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ctype, ok := staticFiles[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(webFS, "web/"+name)
	if err != nil {
		http.Error(w, "static file missing from the binary", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(b)
}

// render executes the named template into a buffer first, so that a
// template error is a clean 500 rather than half a page. The page then
// goes through model.AppendEscapedText, as every text output does: the
// template escaped HTML, this shows control characters, and
// bidirectional overrides (a pipeline name with U+202E renders reversed)
// visibly as \u202e. The escapes are ASCII, safe in text and attributes.
func render(w http.ResponseWriter, status int, name string, data any) error {
	return renderSized(w, status, name, data, 0)
}

// renderSized is render of a page of about size bytes (0: unknown): the
// buffers are made that large at once. An all-pipelines day of 10,000
// rows is megabytes, and growing its buffers by doubling allocated
// several times the page.
func renderSized(w http.ResponseWriter, status int, name string, data any, size int) error {
	var b bytes.Buffer
	b.Grow(size)
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	// Escapes only lengthen the text, and a page rarely has any.
	w.Write(model.AppendEscapedText(make([]byte, 0, b.Len()+64), b.Bytes()))
	return nil
}

func (s *Server) errorPage(w http.ResponseWriter, status int, d ErrorDetail) {
	if err := render(w, status, "error.html", map[string]any{"Status": status, "Error": d}); err != nil {
		http.Error(w, d.Message, status)
	}
}

// gridCell is one pipeline and day of the grid: its batches (usually one).
type gridCell struct {
	Batches []gridBatch
}

// gridBatch is one batch of the grid, its attributes made here: the
// all-pipelines day has a thousand rows, and each template action costs.
type gridBatch struct {
	Batch, URL, Class, Title, Label string
	// from, when not nil, is the listed batch whose cell this is, the
	// fields above yet to be made of it (cellOf; gridRows does).
	from *Batch
}

// gridRow is one pipeline of the grid.
type gridRow struct {
	Pipeline, URL string
	Cells         []gridCell
}

// rowHTML writes row as a <tr> of the grid, each value escaped for its
// place as html/template would (text and quoted attributes: &, <, >, '
// and "; the URLs are built of escaped segments and start with /) and
// then as render escapes a page's text (appendPage). An all-pipelines
// day has thousands of rows of a few cells each, and the template
// engine's reflection per action was a quarter of its CPU.
func rowHTML(b []byte, row *gridRow) []byte {
	b = append(b, `<tr><th><a href="`...)
	b = appendPage(b, row.URL)
	b = append(b, `">`...)
	b = appendPage(b, row.Pipeline)
	b = append(b, "</a></th>\n"...)
	for i := range row.Cells {
		b = append(b, "<td>"...)
		for j := range row.Cells[i].Batches {
			c := &row.Cells[i].Batches[j]
			b = append(b, `<a class="cell `...)
			b = appendPage(b, c.Class)
			b = append(b, `" href="`...)
			b = appendPage(b, c.URL)
			b = append(b, `" title="`...)
			b = appendPage(b, c.Title)
			b = append(b, `" data-batch="`...)
			b = appendPage(b, c.Batch)
			b = append(b, `">`...)
			b = appendPage(b, c.Label)
			b = append(b, "</a>"...)
		}
		b = append(b, "</td>"...)
	}
	return append(b, "\n</tr>"...)
}

// appendPage appends s as a page's text has it: escaped for HTML
// (appendHTML), then as render escapes the whole page
// (model.AppendEscapedText). Rows written of these need no pass of their
// own over the megabytes of an all-pipelines day, and most values have
// neither to escape: eight bytes at a time find out.
func appendPage(b []byte, s string) []byte {
	i := 0
	for i+8 <= len(s) && pagePlain8(load8(s[i:i+8])) {
		i += 8
	}
	for i < len(s) && pagePlain[s[i]] == plainByte {
		i++
	}
	if i == len(s) {
		return append(b, s...)
	}
	// Most that reach here have an HTML escape only (a link's &).
	text := false
	for ; i < len(s) && !text; i++ {
		text = pagePlain[s[i]] == textByte
	}
	if !text {
		return appendHTML(b, s)
	}
	n := len(b)
	b = appendHTML(b, s)
	// Either escape only lengthens the text: a copy of the HTML escaped,
	// then its text escapes in its place.
	esc := model.AppendEscapedText(nil, b[n:])
	return append(b[:n], esc...)
}

// pagePlain8 reports whether none of the eight bytes of x is one
// appendPage may escape: one appendHTML escapes (NUL, the quotes, the
// ampersand, the angle brackets), another below 0x20 (tab and newline
// too: the slow path keeps them), DEL or one with the high bit set. The
// ampersand and the apostrophe differ in the lowest bit only, the angle
// brackets in the second.
func pagePlain8(x uint64) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	q, a, l, d := x^0x22*ones, x&^ones^0x26*ones, x|0x02*ones^0x3e*ones, x^0x7f*ones
	return ((x-0x20*ones)&^x|(q-ones)&^q|(a-ones)&^a|(l-ones)&^l|(d-ones)&^d|x)&highs == 0
}

// The kinds of byte of pagePlain.
const (
	plainByte = iota // written as it is
	htmlByte         // escaped by appendHTML
	textByte         // possibly escaped by model.AppendEscapedText
)

// pagePlain is the kind of each byte for appendPage.
var pagePlain = func() (t [256]uint8) {
	for c := range t {
		switch {
		case htmlSpecial[c]:
			t[c] = htmlByte
		case c < 0x20 || c >= 0x7f:
			t[c] = textByte
		}
	}
	return t
}()

// appendHTML appends s escaped for HTML text and quoted attributes: the
// characters html/template's escapers replace there (NUL as U+FFFD).
func appendHTML(b []byte, s string) []byte {
	// Most values have nothing to escape: a pass eight bytes at a time
	// finds out, where the switch below cost a compare chain a byte (the
	// rows of a day of 10,000 pipelines are 3 MB of them).
	i := 0
	for i+8 <= len(s) && !mayNeedHTMLEscape(load8(s[i:i+8])) {
		i += 8
	}
	for i < len(s) && !htmlSpecial[s[i]] {
		i++
	}
	if i == len(s) {
		return append(b, s...)
	}
	last := 0
	for ; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case 0:
			esc = "\uFFFD"
		default:
			continue
		}
		b = append(append(b, s[last:i]...), esc...)
		last = i + 1
	}
	return append(b, s[last:]...)
}

// mayNeedHTMLEscape reports whether any of the eight bytes of x may be
// one appendHTML escapes: exactly when one is NUL, '"', '&', '\”, '<'
// or '>'. '&' and '\” differ in the lowest bit only, '<' and '>' in the
// second, so four tests for a zero byte cover the six.
func mayNeedHTMLEscape(x uint64) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	zero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	return zero(x)|zero(x^0x22*ones)|zero(x&^ones^0x26*ones)|zero(x|0x02*ones^0x3e*ones) != 0
}

// load8 is the eight bytes of s (at least eight long) as a
// little-endian number: one load, as the compiler combines them.
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// htmlSpecial marks the bytes appendHTML escapes.
var htmlSpecial = [256]bool{'&': true, '<': true, '>': true, '"': true, '\'': true, 0: true}

// The range of the grid when no dates are given: two weeks of one
// pipeline, one week of every pipeline (the landing page: a thousand
// pipelines over two weeks is 140,000 events to read and diagnose).
const (
	defaultGridDays    = 14
	defaultGridAllDays = 7
)

func (s *Server) gridPage(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r.URL.RawQuery, "pipeline", "from", "to", "status", "verdict")
	if err != nil {
		return err
	}
	span := defaultGridDays
	if p.str("pipeline") == "" {
		span = defaultGridAllDays
	}
	f, err := s.batchFilterOf(p, span)
	if err != nil {
		return err
	}
	if n := f.dates.to.DaysSinceEpoch() - f.dates.from.DaysSinceEpoch() + 1; n > 62 {
		return badParam("from", "the grid shows at most 62 days (asked %d): narrow from..to, or use /api/v1/batches", n)
	}
	// The open early warnings depend on the filter alone: read them while
	// the batches are.
	type warnedResult struct {
		warned map[string]string
		err    error
	}
	warnedc := make(chan warnedResult, 1)
	go func() {
		w, err := s.openUnusual(r.Context(), f)
		warnedc <- warnedResult{w, err}
	}()
	all, err := s.listBatches(r.Context(), f)
	if err != nil {
		return err
	}
	var days []string
	for d := f.dates.from; d.Compare(f.dates.to) <= 0; d = d.AddDays(1) {
		days = append(days, d.String())
	}
	// The rows, their cells and a cell's first batch each out of one
	// allocation; a cell's batch made later (gridRows, in parts at the
	// same time: from), as is a row's URL.
	nrows := 0
	for j := range all {
		if j == 0 || all[j].Pipeline != all[j-1].Pipeline {
			nrows++
		}
	}
	rows := make([]gridRow, 0, nrows)
	cells := make([]gridCell, nrows*len(days))
	firsts := make([]gridBatch, len(all))
	counts := map[string]int{}
	for j := range all {
		b := &all[j]
		counts[b.Status]++
		if len(rows) == 0 || rows[len(rows)-1].Pipeline != b.Pipeline {
			k := len(rows) * len(days)
			rows = append(rows, gridRow{Pipeline: b.Pipeline, Cells: cells[k : k+len(days) : k+len(days)]})
		}
		bd, _ := model.ParseDate(b.BusinessDate)
		c := &rows[len(rows)-1].Cells[bd.DaysSinceEpoch()-f.dates.from.DaysSinceEpoch()]
		if c.Batches == nil {
			firsts[j].from = b
			c.Batches = firsts[j : j+1 : j+1]
		} else {
			c.Batches = append(c.Batches, gridBatch{from: b})
		}
	}
	// The batches listed, by key, for notDue: made when a calendar
	// expects a batch (most pipelines of a large estate have none), once
	// whichever part of the rows asks first.
	var (
		listed     map[string]bool
		listedOnce sync.Once
	)
	isListed := func(batch string) bool {
		listedOnce.Do(func() {
			listed = make(map[string]bool, len(all))
			for _, b := range all {
				listed[b.Batch] = true
			}
		})
		return listed[batch]
	}
	wr := <-warnedc
	if wr.err != nil {
		return wr.err
	}
	parts := s.gridRows(rows, f.dates, isListed, wr.warned)
	defer parts.free()
	return renderRows(w, http.StatusOK, "grid.html", map[string]any{
		"Filter": map[string]string{"pipeline": f.pipeline, "from": f.dates.from.String(), "to": f.dates.to.String(), "status": f.status, "verdict": f.verdict},
		"Days":   days, "Rows": len(rows) > 0, "RowsHTML": rowsMark, "Total": len(all), "Counts": counts,
		"Statuses": statusNames, "Verdicts": verdictNames, "Now": s.now(), "Zone": s.zone(f.pipeline),
	}, parts)
}

// rowsMark stands for the rows in the grid's template (RowsHTML):
// renderRows writes the rows where it comes out. The template escapes
// any NUL of the data it fills in, so only this can produce it.
const rowsMark = template.HTML("\x00handoff-grid-rows\x00")

// gridParts are the grid's rows as HTML, escaped as render escapes a
// page, in consecutive parts: the rows of an all-pipelines day are
// written in parts at the same time, on the cores the diagnoses used.
type gridParts [][]byte

// gridRowsPart is how many rows one part of the grid holds at least.
const gridRowsPart = 1024

// pageBuffers keeps the buffers of the grid's parts between requests:
// an all-pipelines day's rows are megabytes.
var pageBuffers sync.Pool

// pageBuffer is a buffer of at least size bytes, a kept one when one is
// large enough. A new one has room to spare: the next page's rows may be
// a little longer.
func pageBuffer(size int) []byte {
	if b, ok := pageBuffers.Get().(*[]byte); ok && cap(*b) >= size {
		return (*b)[:0]
	}
	return make([]byte, 0, size+size/4)
}

// free gives the parts' buffers back for the next page.
func (p gridParts) free() {
	for _, b := range p {
		b = b[:0]
		pageBuffers.Put(&b)
	}
}

// gridRows completes rows (each listed batch's cell: cellOf; the row's
// link; the batches expected and not due, the open early warnings:
// notDue, markUnusual) and writes them (rowHTML), escaped as render
// escapes a page, in parts of consecutive rows.
func (s *Server) gridRows(rows []gridRow, dr dateRange, isListed func(string) bool, warned map[string]string) gridParts {
	n := 1
	if len(rows) >= 2*gridRowsPart {
		n = min(s.shards, len(rows)/gridRowsPart)
	}
	parts := make(gridParts, n)
	fromQ, toQ := url.QueryEscape(dr.from.String()), url.QueryEscape(dr.to.String())
	write := func(i int) {
		lo, hi := i*len(rows)/n, (i+1)*len(rows)/n
		part := rows[lo:hi]
		for j := range part {
			row := &part[j]
			if row.URL == "" {
				row.URL = pipelineGridURL(row.Pipeline, fromQ, toQ)
			}
			for k := range row.Cells {
				for l := range row.Cells[k].Batches {
					if c := &row.Cells[k].Batches[l]; c.from != nil {
						*c = cellOf(c.from)
					}
				}
			}
			s.notDue(row, dr, isListed)
		}
		markUnusual(part, warned)
		var first []byte
		if len(part) > 0 {
			first = rowHTML(nil, &part[0])
		}
		// The other rows are about as long as the first: room for them at
		// once, rather than doubling through megabytes.
		table := append(pageBuffer(len(first)*len(part)*9/8), first...)
		for j := 1; j < len(part); j++ {
			table = rowHTML(table, &part[j])
		}
		parts[i] = table // escaped as a page's text already (appendPage)
	}
	if n == 1 {
		write(0)
		return parts
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { write(i) })
	}
	wg.Wait()
	return parts
}

// renderRows is render of a page whose template writes rowsMark where
// the rows go: the page around them, escaped as render escapes it, with
// the rows, escaped already, in its place. The bytes are render's of the
// page with the rows in the template.
func renderRows(w http.ResponseWriter, status int, name string, data any, rows gridParts) error {
	var b bytes.Buffer
	b.Grow(gridPageRest)
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		return err
	}
	head, tail, ok := bytes.Cut(b.Bytes(), []byte(rowsMark))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(model.AppendEscapedText(make([]byte, 0, len(head)+64), head))
	if !ok {
		return nil // a page without rows
	}
	for _, p := range rows {
		w.Write(p)
	}
	w.Write(model.AppendEscapedText(make([]byte, 0, len(tail)+64), tail))
	return nil
}

// gridPageRest is about how many bytes the grid page has besides its
// rows (the form, the header of days, the legend), for renderSized.
const gridPageRest = 16 << 10

// pipelineGridURL is the grid of one pipeline over the dates whose
// query-escaped ends are fromQ and toQ: url.Values{"pipeline", "from",
// "to"}.Encode(), keys in its order, without a map and a sort for each
// of an all-pipelines grid's thousands of rows.
func pipelineGridURL(pipeline, fromQ, toQ string) string {
	return "/?from=" + fromQ + "&pipeline=" + url.QueryEscape(pipeline) + "&to=" + toQ
}

// cellOf is b as a grid cell: coloured by status, its verdict and first
// missing boundary in the title. An absent expected batch is a cell of its
// own kind ("missing": expected, no event), unlike a day with no batch
// scheduled (an empty cell) or one not due yet (notDue).
func cellOf(b *Batch) gridBatch {
	c := gridBatch{Batch: b.Batch, URL: b.URL, Class: b.Status, Label: "?"}
	if b.Status == "" {
		c.Class = "unknown"
	} else {
		c.Label = b.Status[:1]
	}
	c.Title = b.Batch + ": " + b.Status + ", " + b.Verdict
	if b.FirstMissing != "" {
		c.Title += ", missing " + b.FirstMissing
	}
	if b.Absent {
		c.Class, c.Label = "absent", "m"
		c.Title = b.Batch + ": missing (expected, no event came; " + b.Status + ", " + b.Verdict + ")"
	}
	return c
}

// notDue adds to row the batches its pipeline's calendar expects in dr
// that are not listed (by key) and whose first deadline has not passed as
// of now: expected, not due yet.
func (s *Server) notDue(row *gridRow, dr dateRange, listed func(batch string) bool) {
	// A pipeline without a schedule expects nothing: the contracts say
	// so without a look-up of its default contract, when they can
	// (contract.Set), for each of the thousands of rows of every
	// pipeline's grid.
	if sc, ok := s.contracts.(scheduledContracts); ok && !sc.Scheduled(row.Pipeline) {
		return
	}
	c := s.contracts.For(row.Pipeline)
	now := s.now()
	for _, k := range c.Expected(dr.from, dr.to) {
		if listed(k.String()) {
			continue
		}
		st := replay.NewState(k)
		d := st.Evaluate(c, now, replay.Context{})
		if batches.Overdue(&d) {
			continue // before the pipeline's history, or covered by a re-run
		}
		i := k.BusinessDate.DaysSinceEpoch() - dr.from.DaysSinceEpoch()
		row.Cells[i].Batches = append(row.Cells[i].Batches, gridBatch{Batch: k.String(), URL: batchPath(k), Class: "notdue", Label: "·",
			Title: k.String() + ": expected, not due yet"})
	}
}

// scheduledContracts are contracts that tell whether a pipeline's
// contract has a schedule without making its contract
// (contract.Set.Scheduled).
type scheduledContracts interface {
	Scheduled(pipeline string) bool
}

// zone is the zone the pages show beside UTC for pipeline: its
// contract's; UTC alone for none (every pipeline, as on the landing grid).
func (s *Server) zone(pipeline string) *time.Location {
	if pipeline == "" {
		return nil
	}
	return s.contracts.For(pipeline).Location
}

// ladderStep is one boundary of the batch page's ladder, with its evidence
// events resolved from the timeline.
type ladderStep struct {
	replay.BoundaryState
	Events []replay.Entry
}

func (s *Server) batchPage(w http.ResponseWriter, r *http.Request) error {
	k, b, err := s.batchOf(r)
	if err != nil {
		return err
	}
	d := b.Diagnosis
	ladder := ladderOf(d)
	var text bytes.Buffer
	if err := report.Text(&text, d); err != nil {
		return err
	}
	fs, err := s.dateFindings(r.Context(), k)
	if err != nil {
		return err
	}
	return render(w, http.StatusOK, "batch.html", map[string]any{
		"Findings": fs, "BatchID": k.BatchID, "Baseline": report.BaselineText(d, d.Zone),
		"Key": k.String(), "D": d, "Zone": d.Zone, "APIURL": "/api/v1" + batchPath(k), "Source": b.Source, "Ladder": ladder, "Report": text.String(), "Sides": b.Sides,
		"Absent": expectedOf(s.contracts.For(k.Pipeline), k, d), "IncidentURL": s.ownIncident(k, d),
		"GridURL": "/?pipeline=" + pathEscape(k.Pipeline) + "&from=" + k.BusinessDate.AddDays(-13).String() + "&to=" + k.BusinessDate.String(),
	})
}

// ladderOf is d's boundary ladder with each boundary's evidence events
// resolved from the timeline: the ladder template's input (the batch
// page's and the incident page's).
func ladderOf(d *replay.Diagnosis) []ladderStep {
	byID := make(map[string]replay.Entry, len(d.Timeline))
	for _, e := range d.Timeline {
		byID[e.EventID] = e
	}
	ladder := make([]ladderStep, 0, len(d.Boundaries))
	for _, bs := range d.Boundaries {
		st := ladderStep{BoundaryState: bs}
		for _, id := range bs.Evidence {
			if e, ok := byID[id]; ok {
				st.Events = append(st.Events, e)
			}
		}
		ladder = append(ladder, st)
	}
	return ladder
}

// ownIncident is the incident page a batch's page links to as the root
// of one: when the batch is not delivered, not blocked itself, and the
// contracts' upstreams put batches downstream of it ("" otherwise). The
// page is not asked whether any of them is blocked: the incident page
// says so, and the batch page stays one read.
func (s *Server) ownIncident(k model.BatchKey, d *replay.Diagnosis) string {
	if d.Verdict == model.Delivered || d.Blocked != nil || len(s.graph.Downstream(k)) == 0 {
		return ""
	}
	return incidentPath(k)
}

// absentBatch is what the page of an expected batch that sent no event
// says: what was expected, when it was due, and what to check.
type absentBatch struct {
	Schedule, Timezone, Artifact, Signal, Owner string
	Due                                         time.Time
	Boundary                                    string
	Holidays                                    int
}

// expectedOf describes batch k when its diagnosis d has no event (nil
// otherwise).
func expectedOf(c *contract.Contract, k model.BatchKey, d *replay.Diagnosis) *absentBatch {
	if d.Events > 0 {
		return nil
	}
	a := &absentBatch{Schedule: string(c.Schedule), Timezone: c.Location.String(), Owner: c.Owner, Holidays: len(c.Holidays), Boundary: d.FirstMissing}
	a.Artifact, _ = c.ArtifactName(k)
	a.Signal, _ = c.SignalName(k)
	for _, bs := range d.Boundaries {
		if bs.Name == d.FirstMissing {
			a.Due = bs.Due
		}
	}
	return a
}

func (s *Server) findingsPage(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r.URL.RawQuery, "pipeline", "state", "kind", "from", "to")
	if err != nil {
		return err
	}
	f, err := findingFilterOf(p)
	if err != nil {
		return err
	}
	all, err := s.findingsOf(r.Context(), f)
	if err != nil {
		return err
	}
	return render(w, http.StatusOK, "findings.html", map[string]any{
		"Findings": all, "Filter": map[string]string{"pipeline": p.str("pipeline"), "state": f.State, "kind": p.str("kind"), "from": p.str("from"), "to": p.str("to")},
	})
}

// openUnusual reads the batches of f's range that have an open early
// warning (kind unusual): the boundary it is about, by batch key.
func (s *Server) openUnusual(ctx context.Context, f batchFilter) (map[string]string, error) {
	ff := findings.Filter{From: f.dates.from, To: f.dates.to, State: findings.StateOpen, Kinds: []string{string(detect.Unusual)}}
	if f.pipeline != "" {
		ff.Pipelines = []string{f.pipeline}
	}
	return s.rd.findingNames(ctx, ff)
}

// markUnusual marks the grid's batches that have an open early warning
// (openUnusual): the cell keeps its status colour, a dotted outline and a
// "!" after its letter say the batch is later than usual.
func markUnusual(rows []gridRow, warned map[string]string) {
	if len(warned) == 0 {
		return
	}
	for i := range rows {
		for j := range rows[i].Cells {
			for b := range rows[i].Cells[j].Batches {
				c := &rows[i].Cells[j].Batches[b]
				if name, ok := warned[c.Batch]; ok {
					c.Class += " unusual"
					c.Label += "!"
					c.Title += "; early warning: " + name + " later than usual"
				}
			}
		}
	}
}

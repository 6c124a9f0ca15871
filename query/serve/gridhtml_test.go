package serve

import (
	"html/template"
	"net/url"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/model"
)

// TestAppendHTML: the grid's rows, written without the template engine,
// escape text and attribute values as html/template does.
func TestAppendHTML(t *testing.T) {
	for _, s := range []string{
		"", "plain.pipeline", `a"b'c&d<e>f`, "<script>alert(1)</script>", "x\x00y", "\u202eevil", "p/2026-09-30/20260930",
		"/batches/bench.p0001.daily/2026-09-15/20260915", "percent%3Fand?=;:", "\xff\xfe bytes above ASCII \u00e9\u4e2d",
	} {
		if got, want := string(appendHTML(nil, s)), template.HTMLEscapeString(s); got != want {
			t.Errorf("appendHTML(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestAppendHTMLEveryPlace: each byte appendHTML escapes, and each
// neighbour of those in the code table, at every place of strings of
// lengths around the eight bytes tested at a time.
func TestAppendHTMLEveryPlace(t *testing.T) {
	for _, c := range []byte{0, 1, '!', '"', '#', '%', '&', '\'', '(', ';', '<', '=', '>', '?', 0x80, 0xff} {
		for n := 1; n <= 19; n++ {
			for at := range n {
				b := []byte(strings.Repeat("abcdefghij", 2)[:n])
				b[at] = c
				if got, want := string(appendHTML(nil, string(b))), template.HTMLEscapeString(string(b)); got != want {
					t.Fatalf("appendHTML(%q) = %q, want %q", b, got, want)
				}
			}
		}
	}
}

// TestAppendPage: a value of the grid's rows is written as render would
// write it in a page: HTML-escaped, then text-escaped (control
// characters, bidi controls, invalid bytes), at every place of strings
// around the eight bytes tested at a time.
func TestAppendPage(t *testing.T) {
	want := func(s string) string { return string(model.AppendEscapedText(nil, appendHTML(nil, s))) }
	for _, s := range []string{
		"", "plain.pipeline", `a"b'c&d<e>f`, "x\x00y", "\u202eevil", "tab\tand\nnewline", "\x1b[31mred", "del\x7f",
		"\xff\xfe bytes above ASCII \u00e9\u4e2d", "cut rune \xe2\x80", "/batches/bench.p0001.daily/2026-09-15/20260915",
	} {
		if got := string(appendPage([]byte("<td>"), s)); got != "<td>"+want(s) {
			t.Errorf("appendPage(%q) = %q, want %q", s, got, "<td>"+want(s))
		}
	}
	for _, c := range []byte{0, 1, '\t', '\n', 0x1f, ' ', '"', '&', '\'', '<', '>', '~', 0x7f, 0x80, 0xc3, 0xe2, 0xff} {
		for n := 1; n <= 19; n++ {
			for at := range n {
				b := []byte(strings.Repeat("abcdefghij", 2)[:n])
				b[at] = c
				if got := string(appendPage(nil, string(b))); got != want(string(b)) {
					t.Fatalf("appendPage(%q) = %q, want %q", b, got, want(string(b)))
				}
			}
		}
	}
	// A row is what the page's escape would make of it.
	row := gridRow{Pipeline: "p\x1b\u202e<x>", URL: "/?pipeline=p", Cells: []gridCell{
		{Batches: []gridBatch{{Batch: "b\x00", URL: "/batches/b", Class: "late", Title: "t\xff\u2066", Label: "l"}}},
	}}
	plain := []byte(`<tr><th><a href="`)
	plain = append(plain, appendHTML(nil, row.URL)...)
	plain = append(plain, `">`...)
	plain = append(plain, appendHTML(nil, row.Pipeline)...)
	plain = append(plain, "</a></th>\n<td>"...)
	c := row.Cells[0].Batches[0]
	plain = append(plain, `<a class="cell `+c.Class+`" href="`+c.URL+`" title="`...)
	plain = append(plain, appendHTML(nil, c.Title)...)
	plain = append(plain, `" data-batch="`...)
	plain = append(plain, appendHTML(nil, c.Batch)...)
	plain = append(plain, `">`+c.Label+"</a></td>\n</tr>"...)
	if got, want := string(rowHTML(nil, &row)), string(model.AppendEscapedText(nil, plain)); got != want {
		t.Errorf("rowHTML:\n got %q\nwant %q", got, want)
	}
}

// TestRowHTML: a row names its pipeline and each cell's class, link,
// title, batch and label, escaped.
func TestRowHTML(t *testing.T) {
	row := gridRow{Pipeline: `p"<x>`, URL: "/?pipeline=p%22", Cells: []gridCell{
		{},
		{Batches: []gridBatch{{Batch: "b/1", URL: "/batches/b/1", Class: "late unusual", Title: `t "q"`, Label: "l!"}}},
	}}
	got := string(rowHTML(nil, &row))
	want := `<tr><th><a href="/?pipeline=p%22">p&#34;&lt;x&gt;</a></th>` + "\n" +
		`<td></td><td><a class="cell late unusual" href="/batches/b/1" title="t &#34;q&#34;" data-batch="b/1">l!</a></td>` + "\n</tr>"
	if got != want {
		t.Errorf("rowHTML:\n got %s\nwant %s", got, want)
	}
	if strings.Contains(got, "<x>") {
		t.Errorf("rowHTML left markup of a pipeline name unescaped: %s", got)
	}
}

// TestPipelineGridURL: a grid row's link is the one url.Values would
// encode, whatever the pipeline's name holds.
func TestPipelineGridURL(t *testing.T) {
	for _, p := range []string{"bench.p0001.daily", `p"<x>`, "a&b=c d", "é/ü?#%", "+"} {
		from, to := "2026-09-01", "2026-09-30"
		want := "/?" + url.Values{"pipeline": {p}, "from": {from}, "to": {to}}.Encode()
		if got := pipelineGridURL(p, url.QueryEscape(from), url.QueryEscape(to)); got != want {
			t.Errorf("pipelineGridURL(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestBatchNames: the key, date and page a list gives each batch are
// k.String(), its date's and batchPath's, whether or not the names need
// an escape in a path.
func TestBatchNames(t *testing.T) {
	for _, k := range []model.BatchKey{
		{Pipeline: "a.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"},
		{Pipeline: "a b/c?", BusinessDate: model.MustParseDate("2026-01-02"), BatchID: "x/y"},
		{Pipeline: "p", BusinessDate: model.MustParseDate("2026-01-02"), BatchID: "50%"},
		{Pipeline: `pipe'quote\'--`, BusinessDate: model.Date{Year: 12345, Month: 1, Day: 2}, BatchID: "1"},
	} {
		key, date, path := batchNames(k)
		if key != k.String() || date != k.BusinessDate.String() || path != batchPath(k) {
			t.Errorf("batchNames(%v) = %q, %q, %q, want %q, %q, %q", k, key, date, path, k.String(), k.BusinessDate.String(), batchPath(k))
		}
	}
}

package serve_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
)

// xss is a payload that, if a page let it through as markup, sets
// window.__xss (and would be refused by the CSP as an inline handler too).
const xss = `"'><img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`

// hostilePipeline is a pipeline name with markup that a request can still
// name (no '/', no space); bidiPipeline one stored by something other than
// handoff ingest (validation rejects it): a bidi override, shown on the
// lists.
const (
	hostilePipeline = `evil<b>x<b>"'&gpj.exe`
	bidiPipeline    = `evil` + "\u202e" + `gpj.exe`
)

// loadHostile stores a batch whose every text field holds markup, escape
// sequences and bidi controls, through ingest's writer (as a compromised
// producer's events would be stored, validation aside), and a finding of
// it whose free-text fields do too (its verdict and first missing boundary
// are read back as a closed set, so they hold valid values).
func loadHostile(t *testing.T, f *fixture) model.BatchKey {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := model.BatchKey{Pipeline: hostilePipeline, BusinessDate: model.MustParseDate("2026-10-01"), BatchID: `b<i>"'&`}
	at := time.Date(2026, 10, 1, 1, 0, 0, 0, time.UTC)
	ev := func(id string, typ model.EventType, sys model.System) model.Event {
		return model.Event{Spec: model.SpecV1, ID: id + xss, Type: typ, Time: at, Pipeline: key.Pipeline, BusinessDate: key.BusinessDate,
			BatchID: key.BatchID, System: sys, Component: "c" + xss + "\x1b[2J", Object: "o" + xss + "\u202e",
			Attrs: map[string]string{"k" + xss: "v" + xss + "\x1b]52;c;ZXZpbA==\x07"}}
	}
	failed := ev("h2", model.ConsumeFailed, model.Consumer)
	failed.Error = "e" + xss + "\x1b]0;title\x07\u202e"
	bidi := ev("h3", model.JobSucceeded, model.Producer)
	bidi.Pipeline = bidiPipeline
	events := []model.Event{ev("h1", model.JobSucceeded, model.Producer), failed, bidi}
	s := f.sink
	if err := s.Events(ctx, events); err != nil {
		t.Fatal(err)
	}
	var finds schema.FindingRows
	finds.Add(schema.FindingRow{Key: key, Fingerprint: "fp" + xss, Seq: 1, State: "open", Kind: "overdue", Name: "n" + xss,
		RaisedMS: at.UnixMilli(), DeadlineMS: at.UnixMilli(), Severity: "s" + xss, Owner: "o" + xss, EvidenceAsOfMS: at.UnixMilli(),
		Status: "late", Verdict: "not_identified", FirstMissing: "signal_delivered", Diagnosis: "{}"}, schema.Source{Topic: "t", Offset: 99}, asOf.UnixMilli())
	if err := s.InsertColumns(ctx, schema.Findings, schema.FindingColumns, finds.Columns()); err != nil {
		t.Fatal(err)
	}
	return key
}

func hostilePages(key model.BatchKey) []string {
	return []string{
		"/?from=2026-09-28&to=2026-10-02",
		"/?pipeline=" + url.QueryEscape(key.Pipeline) + "&from=2026-09-28&to=2026-10-02",
		"/batches/" + url.PathEscape(key.Pipeline) + "/2026-10-01/" + url.PathEscape(key.BatchID),
		"/findings",
		"/findings?state=open",
		"/incidents/" + url.PathEscape(key.Pipeline) + "/2026-10-01/" + url.PathEscape(key.BatchID),
	}
}

// TestHostileStoredText: every stored text field holding markup reaches the
// pages as text (never markup), and the control characters and bidi
// overrides in it are shown as escapes (a pipeline with U+202E used to
// render reversed).
func TestHostileStoredText(t *testing.T) {
	f := newFixture(t)
	key := loadHostile(t, f)
	for _, p := range hostilePages(key) {
		code, body := f.get(t, p)
		if code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
			continue
		}
		page := string(body)
		for _, raw := range []string{`<img src=x`, `<script>window`, "\u202e", "\x1b", "\x07", `<b>x`, `<i>"`} {
			if strings.Contains(page, raw) {
				t.Errorf("GET %s: the page holds %q raw", p, raw)
			}
		}
	}
	_, body := f.get(t, hostilePages(key)[2])
	for _, want := range []string{`\u202e`, `\x1b]0;title\x07`, `&lt;img src=x`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("batch page lacks %q (the hostile text shown visibly):\n%s", want, body)
		}
	}
	_, body = f.get(t, hostilePages(key)[0])
	if !strings.Contains(string(body), `evil\u202egpj.exe`) {
		t.Errorf("the grid does not show the bidi override of %q visibly", bidiPipeline)
	}
}

// TestHostileStoredTextInBrowser: the same pages in headless Chromium: no
// payload runs (window.__xss stays unset) on any page.
func TestHostileStoredTextInBrowser(t *testing.T) {
	testenv.Integration(t)
	bin := chromiumPath(t)
	f := newFixture(t)
	key := loadHostile(t, f)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for _, p := range hostilePages(key) {
		if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+p), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
			t.Fatalf("browser: %s: %v", p, err)
		}
		ran := run(t, ctx, "window.__xss on "+p, chromedp.Evaluate[bool](`window.__xss !== undefined`))
		text := run(t, ctx, "the text of "+p, chromedp.Text(chromedp.CSS("body")))
		if ran {
			t.Errorf("%s: a stored payload ran in the page", p)
		}
		if strings.Contains(text, "\u202e") {
			t.Errorf("%s: a bidi override reached the rendered text", p)
		}
	}
}

// TestSecurityHeaders: every response, page, API, static file, error,
// health and metrics, carries the headers that keep a browser from
// sniffing, framing, leaking the URL, or running anything not of this
// origin's stylesheet.
func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/", "/findings", "/batches/" + seedBatch, "/api/v1/batches", "/api/v1/nope", "/healthz", "/metrics",
		"/static/style.css", "/static/", "/nope"} {
		resp, err := http.Get(f.http.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: headers %v: want nosniff, DENY, no-referrer and the CSP", p, h)
		}
	}
}

// TestStaticOnlyStylesheet: /static/ serves the stylesheet and nothing
// else: no directory listing, no template source, no traversal.
func TestStaticOnlyStylesheet(t *testing.T) {
	srv := newHTTP(t, newServer(t, testenv.ClickHouse(t), "handoff", time.Second))
	for _, tt := range []struct {
		path   string
		status int
	}{
		{"/static/style.css", 200},
		{"/static/", 404},
		{"/static", 404},
		{"/static/grid.html", 404},
		{"/static/layout.html", 404},
		{"/static/..%2fpages.go", 404},
		{"/static/%2e%2e/server.go", 404},
		{"/static/web/style.css", 404},
	} {
		resp, err := http.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 512)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("GET %s: %d, want %d: %s", tt.path, resp.StatusCode, tt.status, b[:n])
		}
		if strings.Contains(string(b[:n]), "{{") || strings.Contains(string(b[:n]), `<a href="`) {
			t.Errorf("GET %s: a template or a listing: %s", tt.path, b[:n])
		}
		if tt.status == 200 && resp.Header.Get("Content-Type") != "text/css; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", tt.path, resp.Header.Get("Content-Type"))
		}
	}
}

// readerUser is the read-only user the test services create
// (deploy/clickhouse/users.d/handoff_reader.xml: the readonly profile).
const readerUser = "handoff_reader"

// TestServicesReadonlyUser runs the server as the services' read-only
// user, a real readonly=1 user rather than a setting on the session: the
// server sees it, the user may not even change a setting (nor, with it,
// write), and every endpoint and page works.
func TestServicesReadonlyUser(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reader, err := chconn.Open(ctx, chconn.Config{Addr: testenv.ClickHouseAddr(t), User: readerUser})
	if err != nil {
		t.Fatalf("connect as %s: %v; the services create it from deploy/clickhouse/users.d/ (a server started before that file existed reloads it within seconds)", readerUser, err)
	}
	defer reader.Close()
	if rows, err := reader.Query(ctx, "SELECT 1 SETTINGS max_threads = 1"); err == nil {
		rows.Close()
		t.Fatalf("%s changed a setting: it is not read-only", readerUser)
	} else if !strings.Contains(err.Error(), "readonly") {
		t.Fatalf("%s changing a setting: %v, want a readonly refusal", readerUser, err)
	}
	srv := newServer(t, reader, f.db, 10*time.Second)
	if !srv.Readonly() {
		t.Fatalf("the server did not see that %s is readonly=1", readerUser)
	}
	h := newHTTP(t, srv)
	for _, p := range []string{"/", "/batches/" + seedBatch, "/findings", "/healthz", "/api/v1/batches?pipeline=" + seedPipeline + "&from=2026-09-29&to=2026-09-30",
		"/api/v1/batches/" + seedBatch, "/api/v1/findings", "/api/v1/dashboards/batch_status?from=2026-09-01&to=2026-10-03"} {
		resp, err := http.Get(h.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("as %s: GET %s: %d", readerUser, p, resp.StatusCode)
		}
	}
}

// TestHostileParamsEveryRoute replays the hostile run's query parameters
// on every route: each parameter name (known and not) with each hostile
// value, and hostile path segments. No answer is a 5xx, and no request
// answered 400 reached ClickHouse.
func TestHostileParamsEveryRoute(t *testing.T) {
	f := newFixture(t)
	routes := []string{"/api/v1/batches", "/api/v1/batches/" + seedBatch, "/api/v1/findings", "/api/v1/dashboards",
		"/api/v1/dashboards/batch_status", "/api/v1/dashboards/open_findings", "/", "/batches/" + seedBatch, "/findings", "/healthz",
		"/incidents/" + seedBatch, "/api/v1/incidents/" + seedBatch}
	names := []string{"pipeline", "from", "to", "status", "verdict", "page", "size", "state", "kind", "limit", "x"}
	values := []string{"'", `"`, "\x00", "%00", "../../etc/passwd", strings.Repeat("a", 5000), "<script>alert(1)</script>", "\u202e",
		"1e309", "-1", "99999999999999999999", "2026-02-30", "x' OR '1'='1", "; DROP TABLE events --", "\x1b[2J", "NaN", " "}
	check := func(path string) {
		t.Helper()
		f.conn.reset()
		resp, err := http.Get(f.http.URL + path)
		if err != nil {
			t.Fatalf("GET %.200s: %v", path, err)
		}
		resp.Body.Close()
		sqls, _ := f.conn.reset()
		switch {
		case resp.StatusCode >= 500:
			t.Errorf("GET %.200s: %d", path, resp.StatusCode)
		case resp.StatusCode == 400 && len(sqls) > 0:
			t.Errorf("GET %.200s: 400, but %d statements reached ClickHouse", path, len(sqls))
		}
	}
	n := 0
	for _, r := range routes {
		for _, name := range names {
			for _, v := range values {
				check(r + "?" + name + "=" + url.QueryEscape(v))
				n++
			}
			check(r + "?" + name + "=a&" + name + "=b")
			check(r + "?" + name + "=%zz")
			n += 2
		}
	}
	for _, seg := range []string{"..", "%2e%2e", "%00", "a%2Fb", url.PathEscape("<script>"), strings.Repeat("a", 300), url.PathEscape("\u202e")} {
		for _, p := range []string{"/batches/" + seg + "/2026-09-30/20260930", "/batches/" + seedPipeline + "/" + seg + "/20260930", "/batches/" + seedPipeline + "/2026-09-30/" + seg,
			"/api/v1/batches/" + seg + "/2026-09-30/20260930", "/api/v1/dashboards/" + seg, "/static/" + seg,
			"/incidents/" + seg + "/2026-09-30/20260930", "/incidents/" + seedPipeline + "/" + seg + "/20260930", "/api/v1/incidents/" + seedPipeline + "/2026-09-30/" + seg} {
			check(p)
			n++
		}
	}
	t.Logf("%d hostile requests", n)
}

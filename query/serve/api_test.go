package serve_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/query/serve"
)

// TestBatchAPI reads the fixture through the API and checks the contents:
// the seed batches diagnosed on read, the stored diagnosis used as stored,
// filters, pagination and its stable order.
func TestBatchAPI(t *testing.T) {
	f := newFixture(t)

	var list serve.BatchList
	f.getJSON(t, "/api/v1/batches?pipeline="+seedPipeline+"&from=2026-09-29&to=2026-09-30", 200, &list)
	if list.Total != 2 || len(list.Batches) != 2 {
		t.Fatalf("seed list: total %d, %d batches; want 2 and 2: %+v", list.Total, len(list.Batches), list)
	}
	for i, want := range []struct{ batch, status, verdict, missing string }{
		{seedPipeline + "/2026-09-29/20260929", "delivered", "delivered", ""},
		{seedBatch, "late", "not_identified", "signal_delivered"},
	} {
		b := list.Batches[i]
		if b.Batch != want.batch || b.Status != want.status || b.Verdict != want.verdict || b.FirstMissing != want.missing || b.Source != "on_read" {
			t.Errorf("batch %d: %s %s %s missing %q source %s; want %s %s %s missing %q on_read", i, b.Batch, b.Status, b.Verdict, b.FirstMissing, b.Source,
				want.batch, want.status, want.verdict, want.missing)
		}
	}
	if got := list.Batches[1].URL; got != "/batches/"+seedPipeline+"/2026-09-30/20260930" {
		t.Errorf("batch URL %q", got)
	}

	// Every pipeline, over three days: key order (pipeline, date, id).
	f.getJSON(t, "/api/v1/batches?from=2026-09-29&to=2026-10-02", 200, &list)
	var keys []string
	for _, b := range list.Batches {
		keys = append(keys, b.Batch+"="+b.Source+":"+b.Status)
	}
	want := []string{
		seedPipeline + "/2026-09-29/20260929=on_read:delivered",
		seedBatch + "=on_read:late",
		// job.succeeded alone: success_without_artifact
		quotedPipeline + "/2026-10-01/20261001=on_read:broken",
		quotedPipeline + "/2026-10-02/20261002=on_read:broken",
		// the same events, but the stored diagnosis is what counts
		storedPipeline + "/2026-10-01/20261001=stored:failed",
	}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Errorf("all pipelines:\n got %v\nwant %v", keys, want)
	}

	// Pages of one: the same order, a total, a link to the next page.
	var seen []string
	next := "/api/v1/batches?from=2026-09-29&to=2026-10-02&size=1"
	for next != "" {
		var p serve.BatchList
		f.getJSON(t, next, 200, &p)
		if p.Total != 5 || p.Pages != 5 || len(p.Batches) != 1 {
			t.Fatalf("%s: total %d pages %d, %d batches; want 5, 5, 1", next, p.Total, p.Pages, len(p.Batches))
		}
		seen = append(seen, p.Batches[0].Batch+"="+p.Batches[0].Source+":"+p.Batches[0].Status)
		next = p.NextPage
	}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("paged:\n got %v\nwant %v", seen, want)
	}

	// Filters by status and verdict apply to stored and on-read alike.
	f.getJSON(t, "/api/v1/batches?from=2026-09-29&to=2026-10-02&status=late&verdict=not_identified", 200, &list)
	if list.Total != 1 || list.Batches[0].Batch != seedBatch {
		t.Errorf("status=late&verdict=not_identified: %+v", list.Batches)
	}
	f.getJSON(t, "/api/v1/batches?from=2026-09-29&to=2026-10-02&status=failed", 200, &list)
	if list.Total != 1 || list.Batches[0].Pipeline != storedPipeline {
		t.Errorf("status=failed: %+v", list.Batches)
	}
	f.getJSON(t, "/api/v1/batches?from=2026-09-29&to=2026-10-02&status=broken", 200, &list)
	if list.Total != 2 || list.Batches[0].Pipeline != quotedPipeline {
		t.Errorf("status=broken: %+v", list.Batches)
	}
	// A page past the end is empty, not an error.
	f.getJSON(t, "/api/v1/batches?from=2026-09-29&to=2026-10-02&page=9", 200, &list)
	if list.Total != 5 || len(list.Batches) != 0 {
		t.Errorf("page 9: total %d, %d batches", list.Total, len(list.Batches))
	}
}

// TestOneBatch checks the batch endpoint: the seed batch diagnosed on read
// with its contract (timeline, ladder, next step), a stored one as stored.
func TestOneBatch(t *testing.T) {
	f := newFixture(t)
	var b struct {
		Source    string           `json:"source"`
		Diagnosis replay.Diagnosis `json:"diagnosis"`
		Sides     []replay.Side    `json:"sides"`
	}
	f.getJSON(t, "/api/v1/batches/"+seedBatch, 200, &b)
	d := b.Diagnosis
	if b.Source != "on_read" || d.Status != replay.StatusLate || d.Verdict.String() != "not_identified" || d.FirstMissing != "signal_delivered" {
		t.Errorf("seed batch: source %s status %s verdict %s first_missing %s", b.Source, d.Status, d.Verdict, d.FirstMissing)
	}
	if d.NextStep.Action != replay.ActionRestoreSignal || d.Contract == "default" || !d.AsOf.Equal(asOf) {
		t.Errorf("seed batch: next step %s, contract %s, as of %v; want restore_signal under the file contract as of %v", d.NextStep.Action, d.Contract, d.AsOf, asOf)
	}
	if len(d.Timeline) != 6 || d.Previous == nil || !d.Previous.Delivered {
		t.Errorf("seed batch: %d timeline entries, previous %+v; want the 6 of seed-case.jsonl and the delivered 20260929", len(d.Timeline), d.Previous)
	}
	if len(b.Sides) == 0 {
		t.Error("seed batch: no narrative sides")
	}

	f.getJSON(t, "/api/v1/batches/"+storedPipeline+"/2026-10-01/20261001", 200, &b)
	if b.Source != "stored" || b.Diagnosis.NextStep.Summary != "stored" || b.Diagnosis.Status != replay.StatusFailed {
		t.Errorf("stored batch: source %s, next step %q, status %s; want the stored diagnosis", b.Source, b.Diagnosis.NextStep.Summary, b.Diagnosis.Status)
	}

	var e serve.ErrorBody
	f.getJSON(t, "/api/v1/batches/"+seedPipeline+"/2026-09-28/20260928", 404, &e)
	if e.Error.Code != "not_found" || !strings.Contains(e.Error.Message, "20260928") {
		t.Errorf("unknown batch: %+v", e)
	}
}

// findingList is a page of GET /api/v1/findings as a client reads it
// (serve.FindingList holds the analyzer's findings, which encode to it).
type findingList struct {
	Total    int `json:"total"`
	Findings []struct {
		Fingerprint string `json:"fingerprint"`
		State       string `json:"state"`
		Seq         int    `json:"seq"`
		AgeSeconds  int64  `json:"age_seconds"`
		URL         string `json:"url"`
	} `json:"findings"`
}

// TestFindingsAPI checks the findings: latest state per fingerprint, open
// first and oldest first, filters.
func TestFindingsAPI(t *testing.T) {
	f := newFixture(t)
	var l findingList
	f.getJSON(t, "/api/v1/findings", 200, &l)
	var got []string
	for _, x := range l.Findings {
		got = append(got, fmt.Sprintf("%s:%s:%d:%d", x.Fingerprint, x.State, x.Seq, x.AgeSeconds))
	}
	// Ages as of 2026-10-03T00:00Z; the resolved one aged until resolved.
	want := "fp-seed:open:1:179070 fp-newer:open:1:57600 fp-done:resolved:2:9900"
	if strings.Join(got, " ") != want || l.Total != 3 {
		t.Errorf("findings: total %d\n got %s\nwant %s", l.Total, strings.Join(got, " "), want)
	}
	if l.Findings[0].URL != "/batches/"+seedBatch {
		t.Errorf("finding URL %q, want the batch page", l.Findings[0].URL)
	}
	f.getJSON(t, "/api/v1/findings?state=open&kind=missing", 200, &l)
	if l.Total != 1 || l.Findings[0].Fingerprint != "fp-newer" {
		t.Errorf("state=open&kind=missing: %+v", l.Findings)
	}
	f.getJSON(t, "/api/v1/findings?pipeline=other&from=2026-09-01&to=2026-09-30", 200, &l)
	if l.Total != 0 || l.Findings == nil {
		t.Errorf("another pipeline: %+v (want an empty list, not null)", l)
	}
}

// TestDashboardsAPI lists the dashboard queries and runs each by name with
// its date parameters over the fixture: columns and types come back as
// query/dash describes them, and batch_status holds the seed batches.
func TestDashboardsAPI(t *testing.T) {
	f := newFixture(t)
	var list struct{ Dashboards []serve.Dashboard }
	f.getJSON(t, "/api/v1/dashboards", 200, &list)
	if len(list.Dashboards) == 0 {
		t.Fatal("no dashboards listed")
	}
	for _, d := range list.Dashboards {
		q := url.Values{}
		for _, p := range d.Params {
			switch {
			case p.Name == "from":
				q.Set(p.Name, "2026-09-01")
			case p.Name == "to":
				q.Set(p.Name, "2026-10-03")
			case p.Required:
				t.Errorf("dashboard %s requires %s (%s): this test gives only from and to; extend it", d.Name, p.Name, p.Type)
			}
		}
		var res serve.DashboardResult
		f.getJSON(t, d.URL+"?"+q.Encode(), 200, &res)
		if res.Name != d.Name || len(res.Columns) == 0 || len(res.Columns) != len(res.Types) || res.Rows == nil {
			t.Errorf("dashboard %s: %+v", d.Name, res)
		}
		if d.Name != "batch_status" {
			continue
		}
		found := false
		for _, r := range res.Rows {
			found = found || fmt.Sprint(r[:6]) == fmt.Sprint([]any{seedPipeline, "2026-09-30", "20260930", "late", "not_identified", "signal_delivered"})
		}
		if !found {
			t.Errorf("batch_status has no row for the seed batch (late, not_identified, signal_delivered): %v", res.Rows)
		}
	}
}

// TestHostileParams sends what an attacker or a typo would: each gets a
// 4xx with a clear message naming the parameter, and none reaches
// ClickHouse at all.
func TestHostileParams(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("a", 300)
	for _, tt := range []struct {
		path   string
		status int
		param  string
		says   string
	}{
		{"/api/v1/batches?pipeline=" + url.QueryEscape("x' OR 1=1 --"), 400, "pipeline", "spaces"},
		{"/api/v1/batches?pipeline=" + url.QueryEscape("a/b"), 400, "pipeline", "'/'"},
		{"/api/v1/batches?pipeline=" + long, 400, "pipeline", "more than 256"},
		{"/api/v1/batches?from=2026-13-01", 400, "from", "YYYY-MM-DD"},
		{"/api/v1/batches?from=" + url.QueryEscape("2026-01-01'; DROP TABLE events"), 400, "from", "not a date"},
		{"/api/v1/batches?to=yesterday", 400, "to", "not a date"},
		{"/api/v1/batches?from=2026-10-02&to=2026-10-01", 400, "from", "after"},
		{"/api/v1/batches?from=2020-01-01&to=2026-01-01", 400, "from", "narrow"},
		{"/api/v1/batches?status=" + url.QueryEscape("late' OR '1'='1"), 400, "status", "want one of"},
		{"/api/v1/batches?verdict=ok", 400, "verdict", "want one of"},
		{"/api/v1/batches?size=100000", 400, "size", "1 to 500"},
		{"/api/v1/batches?page=-1", 400, "page", "whole number"},
		{"/api/v1/batches?page=99999999999999999999", 400, "page", "whole number"},
		{"/api/v1/batches?pipline=x", 400, "pipline", "unknown parameter"},
		{"/api/v1/batches?status=late&status=failed", 400, "status", "once"},
		{"/api/v1/batches?" + strings.Repeat("pipeline=x&", 500), 400, "query", "bytes"},
		{"/api/v1/batches?pipeline=%zz", 400, "query", "not a valid query string"},
		{"/api/v1/batches/" + seedPipeline + "/2026-02-30/x", 400, "business_date", "YYYY-MM-DD"},
		{"/api/v1/batches/" + url.PathEscape("p q") + "/2026-09-30/x", 400, "pipeline", "spaces"},
		{"/api/v1/batches/" + seedPipeline + "/2026-09-30/" + long, 400, "batch_id", "longer"},
		{"/api/v1/findings?state=" + url.QueryEscape("open') --"), 400, "state", "want one of"},
		{"/api/v1/findings?from=2026-09-01", 400, "from", "both"},
		{"/api/v1/findings?kind=" + url.QueryEscape("a b"), 400, "kind", "spaces"},
		{"/api/v1/dashboards/" + url.PathEscape("x'; DROP TABLE events; --"), 404, "", "no dashboard query"},
		{"/api/v1/dashboards/no_such_query", 404, "", "no dashboard query"},
		{"/api/v1/nothing", 404, "", "no API endpoint"},
		{"/batches/" + seedPipeline + "/not-a-date/x", 400, "business_date", "YYYY-MM-DD"},
		{"/?from=2026-01-01&to=2026-09-30", 400, "from", "62 days"},
	} {
		code, body := f.get(t, tt.path)
		sqls, _ := f.conn.reset()
		if code != tt.status {
			t.Errorf("GET %.100s: %d, want %d: %s", tt.path, code, tt.status, body)
			continue
		}
		if len(sqls) != 0 {
			t.Errorf("GET %.100s: reached ClickHouse with %d statements, want none: %q", tt.path, len(sqls), sqls)
		}
		if strings.HasPrefix(tt.path, "/api/") {
			var e serve.ErrorBody
			if err := jsonUnmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Param != tt.param || !strings.Contains(e.Error.Message, tt.says) {
				t.Errorf("GET %.100s: error %s; want param %q and a message saying %q", tt.path, body, tt.param, tt.says)
			}
		} else if !strings.Contains(string(body), tt.says) {
			t.Errorf("GET %.100s: error page does not say %q:\n%s", tt.path, tt.says, body)
		}
	}

	// A dashboard's own parameters are checked by query/dash: still a 400
	// naming the parameter, with nothing sent.
	var list struct{ Dashboards []serve.Dashboard }
	f.getJSON(t, "/api/v1/dashboards", 200, &list)
	f.conn.reset()
	for _, d := range list.Dashboards {
		var e serve.ErrorBody
		f.getJSON(t, d.URL+"?not_a_param="+url.QueryEscape("1' OR 1=1"), 400, &e)
		if e.Error.Code != "bad_param" || e.Error.Param == "" {
			t.Errorf("dashboard %s with an unknown parameter: %+v", d.Name, e)
		}
		if sqls, _ := f.conn.reset(); len(sqls) != 0 {
			t.Errorf("dashboard %s with an unknown parameter reached ClickHouse: %q", d.Name, sqls)
		}
	}
}

// TestQuotedPipelineIsBound reads a pipeline whose name holds quotes and a
// comment marker: it comes back exactly, and the name travels only as a
// bound argument, never in the statement text.
func TestQuotedPipelineIsBound(t *testing.T) {
	f := newFixture(t)
	var list serve.BatchList
	f.getJSON(t, "/api/v1/batches?from=2026-09-29&to=2026-10-02&pipeline="+url.QueryEscape(quotedPipeline), 200, &list)
	if list.Total != 2 || list.Batches[0].Pipeline != quotedPipeline || list.Batches[1].Pipeline != quotedPipeline {
		t.Fatalf("quoted pipeline: %+v", list.Batches)
	}
	sqls, args := f.conn.reset()
	if len(sqls) == 0 || contains(sqls, "pipe'quote") {
		t.Errorf("statements sent %q: want some, none holding the pipeline name", sqls)
	}
	bound := false
	for _, a := range args {
		for _, v := range a {
			bound = bound || v == quotedPipeline
		}
	}
	if !bound {
		t.Errorf("the pipeline name was not a bound argument: %v", args)
	}
}

// TestReadonlyUser runs the server as a readonly=1 user would (the
// readonly profile, set here on every query of the session): it sees that
// it may not change settings, sends none, and every endpoint works.
func TestReadonlyUser(t *testing.T) {
	f := newFixture(t)
	ro := &readonlyConn{Conn: f.raw}
	srv := newServer(t, ro, f.db, 10*time.Second)
	if !srv.Readonly() {
		t.Fatal("the server did not see readonly=1")
	}
	// The user really is read-only: readonly=1 refuses even a setting
	// changed in a query (and, with it, every write; a read test does not
	// try one: only ingest writes).
	if rows, err := ro.Query(context.Background(), "SELECT 1 SETTINGS max_threads = 1"); err == nil {
		rows.Close()
		t.Fatal("readonly=1 let a query change a setting: the test does not test what it says")
	} else if !strings.Contains(err.Error(), "readonly") {
		t.Fatalf("a setting changed by a readonly=1 query: %v, want a readonly refusal", err)
	}
	h := &fixture{conn: f.conn, http: newHTTP(t, srv)}
	var list serve.BatchList
	h.getJSON(t, "/api/v1/batches?pipeline="+seedPipeline+"&from=2026-09-29&to=2026-09-30", 200, &list)
	if list.Total != 2 {
		t.Errorf("readonly: %d batches, want 2", list.Total)
	}
	var b serve.BatchDetail
	h.getJSON(t, "/api/v1/batches/"+seedBatch, 200, &b)
	if b.Diagnosis == nil || b.Diagnosis.FirstMissing != "signal_delivered" {
		t.Errorf("readonly: batch %+v", b.Diagnosis)
	}
	var fl findingList
	h.getJSON(t, "/api/v1/findings", 200, &fl)
	if fl.Total != 3 {
		t.Errorf("readonly: %d findings, want 3", fl.Total)
	}
	for _, p := range []string{"/", "/batches/" + seedBatch, "/findings", "/healthz",
		"/api/v1/dashboards/batch_status?from=2026-09-01&to=2026-10-03", "/api/v1/dashboards/open_findings"} {
		if code, body := h.get(t, p); code != 200 {
			t.Errorf("readonly: GET %s: %d %s", p, code, body)
		}
	}
}

// readonlyConn runs every query with readonly=1, as a user of the readonly
// profile does. ClickHouse accepts the other settings of the same query
// (18.16 applies them together), so what a readonly user's server would
// refuse is refused here: a context with a deadline, which the driver
// turns into max_execution_time. Settings a caller adds explicitly are
// replaced here (the driver does not show them to a wrapper): that the
// server adds none for a readonly user is what Readonly() reports.
type readonlyConn struct{ driver.Conn }

func (c *readonlyConn) with(ctx context.Context) (context.Context, error) {
	if _, ok := ctx.Deadline(); ok {
		return nil, fmt.Errorf("readonly user: the driver would send max_execution_time (the context has a deadline): Cannot modify 'max_execution_time' setting in readonly mode")
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"readonly": 1})), nil
}

func (c *readonlyConn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	ctx, err := c.with(ctx)
	if err != nil {
		return nil, err
	}
	return c.Conn.Query(ctx, sql, args...)
}

// TestScanLimit: a list over more events than the server reads per
// request is a 400 saying how to narrow it; under the limit it is served.
func TestScanLimit(t *testing.T) {
	f := newFixture(t)
	h := &fixture{http: newHTTP(t, newServerWith(t, f.raw, f.db, serve.Options{MaxScanEvents: 16}))}
	var e serve.ErrorBody
	h.getJSON(t, "/api/v1/batches?from=2026-09-29&to=2026-10-02", 400, &e)
	if e.Error.Param != "from" || !strings.Contains(e.Error.Message, "more than 16 events") || !strings.Contains(e.Error.Message, "narrow") {
		t.Errorf("over the limit: %+v", e)
	}
	var l serve.BatchList
	h.getJSON(t, "/api/v1/batches?pipeline="+seedPipeline+"&from=2026-09-29&to=2026-10-02", 200, &l)
	if l.Total != 2 {
		t.Errorf("16 seed events, under the limit: %d batches, want 2", l.Total)
	}
}

// TestQueryTimeout: a server that does not answer in time gives a 504
// with code timeout, on the API and the pages.
func TestQueryTimeout(t *testing.T) {
	f := newFixture(t)
	slow := &recordingConn{Conn: f.raw}
	srv := newServer(t, slow, f.db, 200*time.Millisecond)
	slow.block = true
	h := &fixture{conn: slow, http: newHTTP(t, srv)}
	var e serve.ErrorBody
	h.getJSON(t, "/api/v1/batches/"+seedBatch, http.StatusGatewayTimeout, &e)
	if e.Error.Code != "timeout" || !strings.Contains(e.Error.Message, "query timeout") {
		t.Errorf("timeout: %+v", e)
	}
	if code, _ := h.get(t, "/?pipeline="+seedPipeline); code != http.StatusGatewayTimeout {
		t.Errorf("grid page on timeout: %d", code)
	}
}

// TestHealthAndMetrics checks /healthz against the real database and that
// /metrics counts the requests served.
func TestHealthAndMetrics(t *testing.T) {
	f := newFixture(t)
	if code, body := f.get(t, "/healthz"); code != 200 || !strings.Contains(string(body), `"status": "ok"`) {
		t.Errorf("healthz: %d %s", code, body)
	}
	f.get(t, "/api/v1/batches?verdict=ok")
	code, body := f.get(t, "/metrics")
	if code != 200 || !strings.Contains(string(body), `handoff_serve_requests_total{code="400",route="api_batches"} 1`) {
		t.Errorf("metrics: %d, no count of the 400:\n%s", code, body)
	}
	// A database without handoff's tables is unhealthy, saying why.
	srv := newServer(t, f.raw, testenv.Name("serve_missing"), time.Second)
	h := &fixture{http: newHTTP(t, srv)}
	if code, body := h.get(t, "/healthz"); code != 503 || !strings.Contains(string(body), "handoff ingest") {
		t.Errorf("healthz without tables: %d %s", code, body)
	}
}

// TestPages reads the pages as HTML: the landing grid covers the week up
// to today, findings come open first, an unknown batch is a 404 page.
func TestPages(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		path   string
		status int
		has    []string
	}{
		// Today is 2026-10-03: the week 09-27..10-03 holds every batch.
		{"/", 200, []string{`data-batch="` + seedBatch + `"`, `class="cell late"`, `data-batch="` + storedPipeline + `/2026-10-01/20261001"`, "2026-09-27", "2026-10-03"}},
		{"/?pipeline=" + seedPipeline + "&from=2026-09-30&to=2026-09-30", 200, []string{`data-batch="` + seedBatch + `"`, "1 batches"}},
		{"/findings?state=open", 200, []string{`href="/batches/` + seedBatch + `"`, "fp-seed", "open"}},
		{"/batches/" + seedBatch, 200, []string{`data-boundary="signal_delivered"`, "not_identified", "restore_signal", `href="/api/v1/batches/` + seedBatch + `"`}},
		{"/batches/" + seedPipeline + "/2026-09-28/20260928", 404, []string{"not_found", "no events stored"}},
	} {
		code, body := f.get(t, tt.path)
		if code != tt.status {
			t.Errorf("GET %s: %d, want %d", tt.path, code, tt.status)
		}
		for _, h := range tt.has {
			if !strings.Contains(string(body), h) {
				t.Errorf("GET %s: page lacks %q", tt.path, h)
			}
		}
	}
	// The findings page puts the open finding before the resolved one.
	_, body := f.get(t, "/findings")
	if i, j := strings.Index(string(body), "fp-seed"), strings.Index(string(body), "fp-done"); i < 0 || j < 0 || i > j {
		t.Errorf("findings page: open fp-seed at %d, resolved fp-done at %d; want open first", i, j)
	}
}

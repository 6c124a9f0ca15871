package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/dash"
	"github.com/handoff-dev/handoff/query/serve"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
	"github.com/handoff-dev/handoff/store/writer"
)

// asOf is the clock of every test server: the seed case's as-of time.
var asOf = time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)

const (
	seedPipeline = "account-balance-snapshot.daily"
	seedBatch    = seedPipeline + "/2026-09-30/20260930"
	// quotedPipeline is a valid pipeline name (events may carry it) that
	// would break out of a quoted SQL string if it were pasted into SQL.
	quotedPipeline = `pipe'quote\'--`
	// storedPipeline has a diagnosis in diagnoses_v2 that differs from what
	// a replay would say, so a test can tell which one the server used.
	storedPipeline = "stored.pipe"
)

// recordingConn passes every read to ClickHouse and records its SQL text
// and bound arguments, so tests can assert what reached the server.
type recordingConn struct {
	driver.Conn
	mu    sync.Mutex
	sqls  []string
	args  [][]any
	block bool // Query waits for its context to end instead (a slow server)
}

func (c *recordingConn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	c.mu.Lock()
	c.sqls = append(c.sqls, sql)
	c.args = append(c.args, args)
	block := c.block
	c.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return c.Conn.Query(ctx, sql, args...)
}

// reset forgets what was recorded and returns it.
func (c *recordingConn) reset() (sqls []string, args [][]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sqls, args = c.sqls, c.args
	c.sqls, c.args = nil, nil
	return sqls, args
}

// fixture is a test database with the seed case and the other rows the
// tests read, and a server over it.
type fixture struct {
	conn *recordingConn
	raw  driver.Conn
	db   string
	sink *writer.Sink // writes into db as ingest does
	srv  *serve.Server
	http *httptest.Server
}

// newFixture loads the fixture into a fresh database and starts a server.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	d := storetest.NewDB(t, "serve_test")
	raw, db := d.Conn, d.Name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	load(t, ctx, d.Sink)
	f := &fixture{conn: &recordingConn{Conn: raw}, raw: raw, db: db, sink: d.Sink}
	f.srv = newServer(t, f.conn, db, 10*time.Second)
	f.http = httptest.NewServer(f.srv)
	t.Cleanup(f.http.Close)
	f.conn.reset()
	return f
}

// newServer starts a serve.Server over conn with the project's contracts
// and the fixed clock.
func newServer(t *testing.T, conn driver.Conn, db string, timeout time.Duration) *serve.Server {
	t.Helper()
	return newServerWith(t, conn, db, serve.Options{QueryTimeout: timeout})
}

// newServerWith is newServer with more options.
func newServerWith(t *testing.T, conn driver.Conn, db string, opts serve.Options) *serve.Server {
	t.Helper()
	contracts, err := contract.LoadFS(os.DirFS("../../deploy"), "contracts")
	if err != nil {
		t.Fatal(err)
	}
	runner, err := dash.NewRunner(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	opts.Database, opts.Contracts, opts.Dashboards = db, contracts, runner
	opts.Now = func() time.Time { return asOf }
	srv, err := serve.New(context.Background(), conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// load writes the fixture: the seed case's events (deploy/demo), three
// events of quotedPipeline, a stored-diagnosis batch, and findings.
func load(t *testing.T, ctx context.Context, s *writer.Sink) {
	t.Helper()
	writeEvents(t, ctx, s)
	// Stored through ingest's rows and sink, as handoff ingest stores them:
	// only ingest writes to ClickHouse.
	var diags schema.DiagnosisRows
	diags.Add(schema.DiagnosisRow{Key: model.BatchKey{Pipeline: storedPipeline, BusinessDate: model.MustParseDate("2026-10-01"), BatchID: "20261001"},
		AsOfMS: asOf.UnixMilli(), Status: "failed", Verdict: "not_produced", FirstMissing: "produced", Diagnosis: storedDiagnosis},
		schema.Source{Topic: "t", Partition: 0, Offset: 1}, asOf.UnixMilli())
	if err := s.InsertColumns(ctx, schema.Diagnoses, schema.DiagnosisColumns, diags.Columns()); err != nil {
		t.Fatal(err)
	}
	// Findings: the seed's overdue finding (open, raised first), a newer
	// open one, and one resolved after two records (the highest seq is its
	// state): its signal was on time by its event time and reached the
	// detector 3 minutes late (lateness 0, a reporting delay).
	key, err := model.ParseBatchKey(seedBatch)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(s string) int64 { t, _ := time.Parse(time.RFC3339, s); return t.UnixMilli() }
	var finds schema.FindingRows
	onTime := "on time (signal_delivered at 2026-09-30T21:58:00Z, deadline 2026-09-30T22:00:00Z), reported late by 3m"
	for _, r := range []struct {
		fp       string
		seq      uint32
		state    string
		kind     string
		raised   string
		resolved int64
	}{
		{"fp-seed", 1, "open", "overdue", "2026-09-30T22:15:30Z", 0},
		{"fp-newer", 1, "open", "missing", "2026-10-02T08:00:00Z", 0},
		{"fp-done", 1, "open", "overdue", "2026-09-29T22:15:00Z", 0},
		{"fp-done", 2, "resolved", "overdue", "2026-09-29T22:15:00Z", ms("2026-09-30T01:00:00Z")},
	} {
		row := schema.FindingRow{Key: key, Fingerprint: r.fp, Seq: r.seq, State: r.state, Kind: r.kind, Name: "signal_delivered",
			RaisedMS: ms(r.raised), ResolvedMS: r.resolved, DeadlineMS: ms("2026-09-30T22:00:00Z"), LatenessMS: 900000,
			Severity: "warning", Owner: "finance-data", EvidenceAsOfMS: ms(r.raised), Status: "late", Verdict: "not_identified",
			FirstMissing: "signal_delivered", Diagnosis: "{}"}
		if r.state == "resolved" {
			row.LatenessMS, row.ReportingDelayMS, row.Resolution = 0, 180_000, onTime
		}
		finds.Add(row, schema.Source{Topic: "t", Partition: 0, Offset: int64(r.seq)}, asOf.UnixMilli())
	}
	if err := s.InsertColumns(ctx, schema.Findings, schema.FindingColumns, finds.Columns()); err != nil {
		t.Fatal(err)
	}
}

// storedDiagnosis is the stored diagnosis of storedPipeline: minimal, but
// what the analyzer writes in shape.
const storedDiagnosis = `{"batch":"stored.pipe/2026-10-01/20261001","pipeline":"stored.pipe","business_date":"2026-10-01","batch_id":"20261001",` +
	`"status":"failed","verdict":"not_produced","first_missing":"produced","hypotheses":[],"anomalies":[],"as_of":"2026-10-03T00:00:00Z",` +
	`"contract":"default","boundaries":[],"next_step":{"action":"finalize_artifact","summary":"stored","checks":[]},"events":1,"timeline":[],` +
	`"expected":{},"alive":[],"first_event_at":"2026-10-01T01:00:00Z","last_event_at":"2026-10-01T01:00:00Z"}`

// get requests path and returns the status and body.
func (f *fixture) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(f.http.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// getJSON requests path, wants status, and decodes the body into v.
func (f *fixture) getJSON(t *testing.T, path string, status int, v any) {
	t.Helper()
	code, body := f.get(t, path)
	if code != status {
		t.Fatalf("GET %s: %d, want %d: %s", path, code, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: body is not JSON: %v\n%s", path, err, body)
	}
}

// contains reports whether any of ss contains sub.
func contains(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// newHTTP serves srv on a loopback port for the test.
func newHTTP(t *testing.T, srv *serve.Server) *httptest.Server {
	t.Helper()
	h := httptest.NewServer(srv)
	t.Cleanup(h.Close)
	return h
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// writeEvents writes the fixture's events (load): the seed case's and
// three of quotedPipeline and storedPipeline. A test that writes them
// again stores a copy of each that merges have not collapsed.
func writeEvents(t *testing.T, ctx context.Context, s *writer.Sink) {
	t.Helper()
	f, err := os.Open("../../deploy/demo/seed-case.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []model.Event
	if _, err := jsonl.Read(ctx, f, jsonl.Options{}, func(line int, e *model.Event, err error) error {
		if err != nil {
			t.Fatalf("seed-case.jsonl line %d: %v", line, err)
		}
		events = append(events, *e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 10, 1, 1, 0, 0, 0, time.UTC)
	for i, p := range []string{quotedPipeline, quotedPipeline, storedPipeline} {
		day := model.MustParseDate("2026-10-01").AddDays(i % 2)
		events = append(events, model.Event{Spec: model.SpecV1, ID: p + "-" + day.String(), Type: model.JobSucceeded, Time: at,
			Pipeline: p, BusinessDate: day, BatchID: day.Compact(), System: model.Producer})
	}
	if err := s.Events(ctx, events); err != nil {
		t.Fatal(err)
	}
}

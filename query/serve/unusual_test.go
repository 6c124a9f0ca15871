package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/diagnose"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/serve"
	"github.com/handoff-dev/handoff/store/chconfig"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

// The grid marks a batch with an open early warning (kind unusual) and
// its legend says what the mark means; a resolved one leaves no mark.
func TestGridMarksUnusual(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := f.sink
	open := model.BatchKey{Pipeline: seedPipeline, BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	done := model.BatchKey{Pipeline: seedPipeline, BusinessDate: model.MustParseDate("2026-09-29"), BatchID: "20260929"}
	ms := func(s string) int64 { t, _ := time.Parse(time.RFC3339, s); return t.UnixMilli() }
	var rows schema.FindingRows
	for i, r := range []struct {
		key      model.BatchKey
		state    string
		resolved int64
	}{{open, "open", 0}, {done, "resolved", ms("2026-09-29T18:00:00Z")}} {
		rows.Add(schema.FindingRow{Key: r.key, Fingerprint: "fp-unusual-" + r.state, Seq: 1, State: r.state, Kind: "unusual", Name: "produced",
			RaisedMS: ms("2026-09-29T17:35:00Z"), ResolvedMS: r.resolved, DeadlineMS: ms("2026-09-29T17:35:00Z"),
			Severity: "info", EvidenceAsOfMS: ms("2026-09-29T17:35:00Z"), Status: "in_progress", Verdict: "not_produced",
			FirstMissing: "produced", Diagnosis: "{}"}, schema.Source{Topic: "u", Partition: 0, Offset: int64(i)}, ms("2026-10-01T00:00:00Z"))
	}
	if err := s.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}
	code, body := f.get(t, "/?pipeline="+seedPipeline+"&from=2026-09-28&to=2026-10-01")
	page := string(body)
	if code != 200 {
		t.Fatalf("grid: %d %s", code, body)
	}
	cell := func(k model.BatchKey) string {
		i := strings.Index(page, `/batches/`+k.Pipeline+`/`+k.BusinessDate.String()+`/`+k.BatchID+`"`)
		if i < 0 {
			t.Fatalf("no cell of %s in the grid:\n%s", k, page)
		}
		start := strings.LastIndex(page[:i], "<a")
		end := strings.Index(page[i:], "</a>")
		return page[start : i+end]
	}
	if c := cell(open); !strings.Contains(c, "unusual") || !strings.Contains(c, "!") || !strings.Contains(c, "early warning: produced") {
		t.Errorf("the batch with an open early warning is not marked: %s", c)
	}
	if c := cell(done); strings.Contains(c, "unusual") {
		t.Errorf("a resolved early warning left a mark: %s", c)
	}
	if !strings.Contains(page, `<span class="unusual">!</span> after the letter = an early warning is open`) {
		t.Errorf("the legend does not explain the mark")
	}
}

// seedDay is the seed case's delivered batch (2026-09-29) moved to
// business date d and later by shift, without the events after until.
func seedDay(t *testing.T, d model.Date, shift time.Duration, until time.Time) []model.Event {
	t.Helper()
	f, err := os.Open("../../deploy/demo/seed-case.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src := model.MustParseDate("2026-09-29")
	days := time.Duration(d.DaysSinceEpoch()-src.DaysSinceEpoch()) * 24 * time.Hour
	var out []model.Event
	if _, err := jsonl.Read(context.Background(), f, jsonl.Options{}, func(line int, e *model.Event, err error) error {
		if err != nil {
			t.Fatalf("seed-case.jsonl line %d: %v", line, err)
		}
		if e.BusinessDate != src || e.Pipeline != seedPipeline {
			return nil
		}
		e.BusinessDate = d
		e.BatchID = strings.ReplaceAll(e.BatchID, src.Compact(), d.Compact())
		e.ID = strings.ReplaceAll(e.ID, src.Compact(), d.Compact())
		e.Object = strings.ReplaceAll(e.Object, src.Compact(), d.Compact())
		e.Time = e.Time.Add(days + shift)
		if !e.Time.After(until) {
			out = append(out, *e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A batch diagnosed on read shows the learned baseline `handoff diagnose
// --clickhouse` shows for the same events and as-of: 28 habitual days of
// the seed pipeline (produced 17:14 to 17:20Z), then a day whose job
// started 40 minutes late and, at 17:45Z, has produced nothing. The API's
// diagnosis carries the command's baseline and usually_by of every
// boundary; the page says it beside the deadline as the text report does
// ("produced usually by ... (p95 over 28 days), deadline ..., now ...").
func TestBatchBaselineOnRead(t *testing.T) {
	tdb := storetest.NewDB(t, "serve_baseline")
	raw, db := tdb.Conn, tdb.Name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := model.MustParseDate("2026-10-01")
	day := first.AddDays(28)
	now := day.In(time.UTC).Add(17*time.Hour + 45*time.Minute)
	var events []model.Event
	for i := range 28 {
		events = append(events, seedDay(t, first.AddDays(i), time.Duration(i%4)*2*time.Minute, now)...)
	}
	events = append(events, seedDay(t, day, 40*time.Minute, now)...)
	w := tdb.Sink
	if err := w.Events(ctx, events); err != nil {
		t.Fatal(err)
	}
	contracts, err := contract.LoadFS(os.DirFS("../../deploy"), "contracts")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(ctx, raw, serve.Options{Database: db, Contracts: contracts, QueryTimeout: 30 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	k := model.BatchKey{Pipeline: seedPipeline, BusinessDate: day, BatchID: day.Compact()}
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, err, b)
		}
		return b
	}

	// `handoff diagnose --clickhouse-addr ... --batch K --as-of now`, in
	// JSON and in text.
	cli := func(format string) []byte {
		t.Helper()
		var out, errs bytes.Buffer
		c := diagnose.Command{Source: diagnose.SourceConfig{ClickHouse: &chconfig.Service{Addr: testenv.ClickHouseAddr(t), Database: db, User: "default"}},
			Batch: k.String(), Contracts: contracts, AsOf: now, Format: format}
		if _, msg := exitcode.Of(c.Run(ctx, nil, &out, &errs)); msg != nil {
			t.Fatalf("handoff diagnose: %v\n%s", msg, errs.String())
		}
		return out.Bytes()
	}
	var want []replay.Diagnosis
	if err := json.Unmarshal(cli("json"), &want); err != nil || len(want) != 1 {
		t.Fatalf("handoff diagnose --format json: %v, %d diagnoses, want the batch's", err, len(want))
	}
	var api struct {
		Source    string           `json:"source"`
		Diagnosis replay.Diagnosis `json:"diagnosis"`
	}
	if err := json.Unmarshal(get("/api/v1"+"/batches/"+seedPipeline+"/"+day.String()+"/"+k.BatchID), &api); err != nil {
		t.Fatal(err)
	}
	got := api.Diagnosis
	if api.Source != "on_read" {
		t.Fatalf("source %q, want on_read", api.Source)
	}
	usually := func(d replay.Diagnosis) string {
		var b strings.Builder
		b.WriteString(d.Baseline)
		for _, bs := range d.Boundaries {
			if !bs.UsuallyBy.IsZero() {
				b.WriteString("; " + bs.Name + " " + bs.UsuallyBy.Format(time.RFC3339))
			}
		}
		return b.String()
	}
	if want[0].Baseline != "p95 over 28 days" {
		t.Fatalf("handoff diagnose shows baseline %q, want p95 over 28 days: the case does not exercise baselines", want[0].Baseline)
	}
	if g, w := usually(got), usually(want[0]); g != w {
		t.Errorf("serve's diagnosis on read: baseline %q\nhandoff diagnose:            %q", g, w)
	}
	if !strings.Contains(usually(got), "produced "+day.In(time.UTC).Add(17*time.Hour+25*time.Minute).Format(time.RFC3339)) {
		t.Errorf("produced not usually by 17:25Z: %s", usually(got))
	}

	// The page: the text report's baseline line, beside the deadline.
	space := regexp.MustCompile(`\s+`)
	text := space.ReplaceAllString(string(cli("text")), " ")
	i := strings.Index(text, "Baseline: ")
	if i < 0 {
		t.Fatalf("handoff diagnose's text shows no baseline:\n%s", text)
	}
	line := text[i : i+strings.Index(text[i:], ".")+1]
	if !strings.Contains(line, "deadline ") || !strings.Contains(line, "later than usual by 20m") {
		t.Errorf("the text report's baseline %q: want the deadline beside it, and later than usual by 20m", line)
	}
	page := html.UnescapeString(string(get("/batches/" + seedPipeline + "/" + day.String() + "/" + k.BatchID)))
	m := regexp.MustCompile(`<p id="baseline">([^<]*)</p>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the batch page shows no baseline:\n%s", page)
	}
	t.Logf("the text report and the page: %s", line)
	if g := space.ReplaceAllString(m[1], " "); g != line {
		t.Errorf("the batch page's baseline %q, the text report's %q", g, line)
	}
}

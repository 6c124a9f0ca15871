package serve_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

// demoDatabase stores what `make demo` leaves in ClickHouse: the seed
// case's events (deploy/demo/seed-case.jsonl) and the findings of the
// demo's detector (its contract, calendar from 2026-09-29, clock
// 2026-10-03T00:00Z), among them the open missing findings of 2026-10-01
// and 2026-10-02. It returns the database and the missing findings' URLs
// as the detector's alerts carry them.
func demoDatabase(t *testing.T) (string, []detect.Finding) {
	t.Helper()
	tdb := storetest.NewDB(t, "serve_demo")
	db := tdb.Name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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
	c, err := contract.LoadFS(os.DirFS("../../deploy"), "contracts/account-balance-snapshot.daily.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := detect.New(detect.Config{Contracts: c, From: model.MustParseDate("2026-09-29")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		d.Observe(&events[i])
	}
	found := d.Advance(asOf, asOf)
	s := tdb.Sink
	if err := s.Events(ctx, events); err != nil {
		t.Fatal(err)
	}
	var rows schema.FindingRows
	var missing []detect.Finding
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	for i, x := range found {
		if x.Kind == detect.Missing {
			missing = append(missing, x)
		}
		rows.Add(schema.FindingRow{Key: x.Batch, Fingerprint: x.Fingerprint, Seq: uint32(x.Seq), State: string(x.State), Kind: string(x.Kind), Name: x.Name,
			RaisedMS: ms(x.RaisedAt), ResolvedMS: ms(x.ResolvedAt), DeadlineMS: ms(x.Deadline), LatenessMS: x.Lateness.Milliseconds(),
			Severity: x.Severity, Owner: x.Owner, EvidenceAsOfMS: ms(x.EvidenceAsOf), Status: string(x.Status), Verdict: x.Verdict,
			FirstMissing: x.Diagnosis.FirstMissing, Diagnosis: string(x.Diagnosis.AppendJSON(nil))},
			schema.Source{Topic: "t", Partition: 0, Offset: int64(i)}, asOf.UnixMilli())
	}
	if err := s.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}
	return db, missing
}

// TestBrowserMissingBatch: after the demo's events, the grid shows
// 2026-10-01 as missing (not as an empty, unscheduled day), and the link
// of its open missing finding on the findings page opens a page that says
// the batch was expected, when it was due, and that no event came. Before,
// the cell was blank and the link a "404: no events stored for batch".
func TestBrowserMissingBatch(t *testing.T) {
	testenv.Integration(t)
	bin := chromiumPath(t)
	db, missing := demoDatabase(t)
	var keys []string
	for _, m := range missing {
		keys = append(keys, m.Batch.String())
	}
	absent := seedPipeline + "/2026-10-01/20261001"
	if strings.Join(keys, " ") != absent+" "+seedPipeline+"/2026-10-02/20261002" {
		t.Fatalf("the demo's detector raised missing findings for %v, want 2026-10-01 and 2026-10-02", keys)
	}
	srv := httptest.NewServer(newServer(t, testenv.ClickHouse(t), db, 10*time.Second))
	t.Cleanup(srv.Close)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	grid := srv.URL + "/?pipeline=" + seedPipeline + "&from=2026-09-28&to=2026-10-04"
	if err := chromedp.Do(ctx, chromedp.Navigate(grid), chromedp.WaitVisible(chromedp.ID("grid"))); err != nil {
		t.Fatalf("browser: open the grid %s: %v", grid, err)
	}
	cells := map[string]string{}
	for _, k := range []string{absent, seedPipeline + "/2026-10-03/20261003"} {
		cells[k] = run(t, ctx, "the class of cell "+k, chromedp.AttributeValue(chromedp.CSS(`a.cell[data-batch="`+k+`"]`), "class")).Value
	}
	if !strings.Contains(cells[absent], "absent") {
		t.Errorf("grid cell of %s has class %q, want the missing (absent) kind", absent, cells[absent])
	}
	if k := seedPipeline + "/2026-10-03/20261003"; !strings.Contains(cells[k], "notdue") {
		t.Errorf("grid cell of %s has class %q, want not due yet", k, cells[k])
	}
	// 2026-09-28 is before the pipeline's history: no cell at all.
	if n := run(t, ctx, "count the cells of 2026-09-28", chromedp.Evaluate[int](`document.querySelectorAll('a.cell[data-batch$="/2026-09-28/20260928"]').length`)); n != 0 {
		t.Errorf("%d cells for 2026-09-28, before the pipeline's first batch; want none", n)
	}

	// The finding's link, as a person follows it from the findings page.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/findings?pipeline="+seedPipeline), chromedp.WaitVisible(chromedp.CSS("table"))); err != nil {
		t.Fatalf("browser: open the findings page: %v", err)
	}
	link := chromedp.CSS(`tr[data-fingerprint="` + missing[0].Fingerprint + `"] a`)
	if err := chromedp.Do(ctx, chromedp.Click(link), chromedp.WaitVisible(chromedp.ID("absent"))); err != nil {
		t.Fatalf("browser: follow the missing finding's link to %s: %v", absent, err)
	}
	text := run(t, ctx, "the absent section", chromedp.Text(chromedp.ID("absent")))
	due := run(t, ctx, "the due time", chromedp.Text(chromedp.ID("due")))
	for _, want := range []string{"Expected", "expects batch 20261001", "no event of it was stored", "producer", "schedule", "holiday"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page of %s does not say %q:\n%s", absent, want, text)
		}
	}
	if wantDue := missing[0].Deadline.UTC().Format("2006-01-02 15:04"); !strings.Contains(due, wantDue) {
		t.Errorf("the page says the batch was due %q, want the finding's deadline %s", due, wantDue)
	}
	if b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(screenshotDir(t)+"/missing.png", b, 0o644)
	}
}

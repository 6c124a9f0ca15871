package serve_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handoff-dev/handoff/internal/testenv"
)

// chromiumPath returns the browser binary: HANDOFF_CHROMIUM (services.env,
// deploy/services/chromium.sh) or chromium on PATH; a missing browser fails
// the test with how to install it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HANDOFF_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: run `make test` (it runs deploy/services/chromium.sh install), or `bash deploy/services/chromium.sh install`, or set HANDOFF_CHROMIUM")
	return ""
}

// screenshotDir is where the browser test writes its screenshots:
// $HANDOFF_DATA_DIR/screenshots, else testdata/out (ignored by git).
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("testdata", "out")
	if d := os.Getenv("HANDOFF_DATA_DIR"); d != "" {
		dir = filepath.Join(d, "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBrowserSeedCase opens the grid in headless Chromium, clicks the seed
// batch 2026-09-30, and finds on its page the verdict not_identified and
// the missing signal_delivered boundary; it saves a screenshot of each page.
func TestBrowserSeedCase(t *testing.T) {
	testenv.Integration(t)
	bin := chromiumPath(t)
	f := newFixture(t)
	shots := screenshotDir(t)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	grid := f.http.URL + "/?pipeline=" + seedPipeline + "&from=2026-09-24&to=2026-10-02"
	cell := chromedp.CSS(`a.cell[data-batch="` + seedBatch + `"]`)
	if err := chromedp.Do(ctx, chromedp.Navigate(grid), chromedp.WaitVisible(chromedp.ID("grid"))); err != nil {
		t.Fatalf("browser: open the grid %s: %v", grid, err)
	}
	attr := run(t, ctx, "the seed cell's class", chromedp.AttributeValue(cell, "class"))
	cellClass := attr.Value
	gridShot := run(t, ctx, "grid screenshot", chromedp.CaptureScreenshot())
	if err := chromedp.Do(ctx, chromedp.Click(cell), chromedp.WaitVisible(chromedp.ID("ladder"))); err != nil {
		t.Fatalf("browser: click the seed batch: %v", err)
	}
	verdict := run(t, ctx, "verdict", chromedp.Text(chromedp.ID("verdict")))
	status := run(t, ctx, "status", chromedp.Text(chromedp.ID("status")))
	missing := run(t, ctx, "first missing", chromedp.Text(chromedp.ID("first-missing")))
	ladderRow := run(t, ctx, "ladder row", chromedp.Text(chromedp.CSS(`tr[data-boundary="signal_delivered"]`)))
	report := run(t, ctx, "report", chromedp.Text(chromedp.ID("report")))
	reported := run(t, ctx, "the resolved finding's resolution", chromedp.Text(chromedp.CSS(`#batch-findings tr[data-fingerprint="fp-done"] td.resolution`)))
	batchShot := run(t, ctx, "batch screenshot", chromedp.CaptureScreenshot())
	if !strings.Contains(cellClass, "late") {
		t.Errorf("grid cell of %s has class %q, want the late colour", seedBatch, cellClass)
	}
	if verdict != "not_identified" || status != "late" || missing != "signal_delivered" {
		t.Errorf("batch page: verdict %q status %q first missing %q; want not_identified, late, signal_delivered", verdict, status, missing)
	}
	if !strings.Contains(ladderRow, "missing") {
		t.Errorf("ladder row signal_delivered reads %q; want it missing", ladderRow)
	}
	if reported != "on time, reported late by 3m" {
		t.Errorf("batch page: the resolved finding's resolution reads %q, want \"on time, reported late by 3m\"", reported)
	}
	if !strings.Contains(report, "restore") {
		t.Errorf("report does not name the safe next step (restore the signal):\n%s", report)
	}
	for name, b := range map[string][]byte{"grid.png": gridShot, "batch.png": batchShot} {
		if len(b) == 0 {
			t.Errorf("screenshot %s is empty", name)
			continue
		}
		p := filepath.Join(shots, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}

// run runs one browser step and returns its value, failing the test when
// the step fails.
func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

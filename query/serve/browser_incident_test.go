package serve_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handoff-dev/handoff/internal/testenv"
)

// TestBrowserIncident opens the seed's incident page in headless Chromium:
// the picture is rendered (its two boxes and the arrow between them have
// a size on the page), the root's box is the broken one, the risk report
// is in the tree; it saves a screenshot, and with HANDOFF_DOCS_IMG=1 writes
// it to docs/img/serve-incident.png (the one docs/incidents.md shows).
func TestBrowserIncident(t *testing.T) {
	testenv.Integration(t)
	bin := chromiumPath(t)
	f := newSeedIncident(t)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	page := f.http.URL + "/incidents/" + seedBatch
	if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("chain"))); err != nil {
		t.Fatalf("browser: open %s: %v", page, err)
	}
	// Rendered, not only present: each box's rectangle and the arrow have
	// a box on the page.
	boxes := run(t, ctx, "the drawn boxes", chromedp.Evaluate[int](`[...document.querySelectorAll('#chain g.node rect')].filter(r => r.getBBox().width > 0 && r.getBoundingClientRect().width > 0).length`))
	edges := run(t, ctx, "the drawn arrows", chromedp.Evaluate[int](`[...document.querySelectorAll('#chain path.edge')].filter(p => p.getTotalLength() > 0).length`))
	broken := run(t, ctx, "the broken box", chromedp.Evaluate[string](`document.querySelector('#chain g.node.broken').getAttribute('data-pipeline')`))
	label := run(t, ctx, "the broken box's label", chromedp.Evaluate[string](`document.querySelector('#chain g.node.broken text.label').textContent`))
	tree := run(t, ctx, "the tree", chromedp.Text(chromedp.ID("tree")))
	ladder := run(t, ctx, "the ladder row", chromedp.Text(chromedp.CSS(`#ladder tr[data-boundary="signal_delivered"]`)))
	shot := run(t, ctx, "incident screenshot", chromedp.CaptureScreenshot())
	if boxes != 2 || edges != 1 {
		t.Errorf("the picture shows %d boxes and %d arrows, want 2 and 1", boxes, edges)
	}
	if broken != seedPipeline || label != "stopped at signal_delivered" {
		t.Errorf("the broken box is %q labelled %q, want %s stopped at signal_delivered", broken, label, seedPipeline)
	}
	if !contains([]string{tree}, riskBatch) || !contains([]string{ladder}, "missing") {
		t.Errorf("the tree %q lacks %s, or the ladder row %q is not missing", tree, riskBatch, ladder)
	}
	if len(shot) == 0 {
		t.Fatal("empty screenshot")
	}
	p := filepath.Join(screenshotDir(t), "incident.png")
	if os.Getenv("HANDOFF_DOCS_IMG") == "1" {
		p = filepath.Join("..", "..", "docs", "img", "serve-incident.png")
	}
	if err := os.WriteFile(p, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

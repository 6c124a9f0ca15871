package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// GitHub's anchor rules: lower case, punctuation dropped, the text of code
// spans and links kept; duplicates are numbered (TestCheck).
func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Streaming detection", "streaming-detection"},
		{"`handoff findings`: what is open now?", "handoff-findings-what-is-open-now"},
		{"The event format (wire format v1)", "the-event-format-wire-format-v1"},
		{"Metrics (`/metrics` on `HANDOFF_METRICS_ADDR`)", "metrics-metrics-on-handoff_metrics_addr"},
		{"Schema (ClickHouse 18.16 and current releases)", "schema-clickhouse-1816-and-current-releases"},
		{"`batch_status`: Batch status by pipeline and business date", "batch_status-batch-status-by-pipeline-and-business-date"},
		{"The local cluster: `make cluster`", "the-local-cluster-make-cluster"},
		{"Remediation, watchers, OpenLineage (2026-11)", "remediation-watchers-openlineage-2026-11"},
		{"Serve: API and web pages ##", "serve-api-and-web-pages"},
		{"See [the docs](docs/x.md)", "see-the-docs"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("docs/a.md", "# A\n## Configuration\n## Tests\n## Tests\n```\n## Not a heading\n```\n")
	write("img/x.png", "png")
	readme := write("README.md", strings.Join([]string{
		"# Top",
		"[ok](docs/a.md) [ok](docs/a.md#configuration) [dup](docs/a.md#tests-1) ![img](img/x.png)",
		"[self](#top) [web](https://example.com/#nothing) [dir](docs/)",
		"`[code](docs/missing.md)` and",
		"```",
		"[fenced](docs/missing.md)",
		"```",
		"[gone](docs/missing.md)",               // line 8
		"[bad anchor](docs/a.md#not-a-heading)", // line 9
		"[bad self](#nowhere)",                  // line 10
		"[ref]: docs/also-missing.md",           // line 11
	}, "\n"))
	var out strings.Builder
	n := check([]string{readme}, &out)
	want := []string{":8: link \"docs/missing.md\"", ":9: link \"docs/a.md#not-a-heading\"",
		":10: link \"#nowhere\"", ":11: link \"docs/also-missing.md\""}
	if n != len(want) {
		t.Errorf("check found %d broken links, want %d:\n%s", n, len(want), out.String())
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("report lacks %s:\n%s", w, out.String())
		}
	}
}

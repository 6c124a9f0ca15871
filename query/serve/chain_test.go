package serve

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestChainSVGGolden: the picture of a small fixed chain (a root, a
// diamond below it, a healthy branch, a name with markup) is the golden
// file, byte for byte, and well-formed XML. The boxes are given in no
// particular order: the layout orders them.
func TestChainSVGGolden(t *testing.T) {
	ups := map[string][]string{
		"b.daily":         {"a.daily"},
		"c.daily":         {"a.daily"},
		"d.daily":         {"b.daily", "c.daily"},
		"e.daily":         {"a.daily", "d.daily"},
		`h<i>"'&.daily`:   {"a.daily"},
		"z-healthy.daily": {"c.daily"},
	}
	boxes := []chainBox{
		{Pipeline: "a.daily", State: ChainRoot, Label: "stopped at signal_delivered", URL: "/batches/a.daily/2026-09-30/20260930", Broken: true},
		{Pipeline: "z-healthy.daily", State: ChainHealthy, Label: "delivered", URL: "/batches/z-healthy.daily/2026-09-30/20260930"},
		{Pipeline: "e.daily", State: ChainBlocked, Label: "blocked (late)", URL: "/batches/e.daily/2026-09-30/20260930"},
		{Pipeline: "d.daily", State: ChainBlocked, Label: "blocked (late)", URL: "/batches/d.daily/2026-09-30/20260930"},
		{Pipeline: "c.daily", State: ChainBlocked, Label: "blocked (late)", URL: "/batches/c.daily/2026-09-30/20260930"},
		{Pipeline: "b.daily", State: ChainBlocked, Label: "blocked (late)", URL: "/batches/b.daily/2026-09-30/20260930"},
		{Pipeline: `h<i>"'&.daily`, State: ChainHealthy, Label: "delivered", URL: "/batches/h%3Ci%3E%22%27&.daily/2026-09-30/20260930"},
	}
	c := layoutChain(boxes, func(p string) []string { return ups[p] })
	levels := map[string]int{}
	for _, n := range c.Nodes {
		levels[n.Pipeline] = n.Level
	}
	// The longest path from the root: e waits for a directly and for d
	// two levels down, so it sits at level 3.
	for p, want := range map[string]int{"a.daily": 0, "b.daily": 1, "c.daily": 1, "d.daily": 2, "e.daily": 3, "z-healthy.daily": 2, `h<i>"'&.daily`: 1} {
		if levels[p] != want {
			t.Errorf("level of %s: %d, want %d", p, levels[p], want)
		}
	}
	got := c.SVG()
	dec := xml.NewDecoder(bytes.NewReader(got))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, got)
		}
	}
	path := filepath.Join("testdata", "incident-chain.svg")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./query/serve -run TestChainSVGGolden -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the SVG differs from %s (go test -run TestChainSVGGolden -update rewrites it after a deliberate change):\n%s", path, got)
	}
}

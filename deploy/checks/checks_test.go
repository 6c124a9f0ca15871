package checks

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The planted texts are assembled here, so that this file does not itself
// cite what the standalone check refuses.
var (
	outsideFile = "design" + ".md"
	ownIssue    = "iss" + "ue 12"
)

const mod = "github.com/handoff-dev/handoff"

// repoRoot is the work tree this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v (the checks need the repository's git work tree)", err)
	}
	return strings.TrimSpace(string(out))
}

// copyTree copies every tracked file of the work tree (git ls-files) into a
// new temporary directory and returns it.
func copyTree(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		write(t, dst, name, string(data), info.Mode().Perm())
	}
	return dst
}

func write(t *testing.T, root, name, text string, perm os.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), perm); err != nil {
		t.Fatal(err)
	}
}

// run runs deploy/SCRIPT of the work tree against the copy (CHECK_ROOT) and
// returns its combined output and exit error. The module cache and build
// cache are the caller's (inherited environment); nothing is downloaded.
func run(t *testing.T, scriptRoot, copyRoot, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(scriptRoot, "deploy", script))
	cmd.Env = append(os.Environ(), "CHECK_ROOT="+copyRoot, "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// goFunc is a Go function of exactly n lines, from "func" to "}".
func goFunc(name string, n int) string {
	return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
}

type plant struct{ name, text string }

// TestCheckImportsPlanted plants one violation of each rule of
// deploy/check-imports.sh in its own copy of the tree and requires the
// script to fail with the message naming it. The rest of the tree is not
// required to pass (the layout is still moving), so each case asserts on
// its own message, and where the planted file sits next to a legal one (a
// 60-line function), that the legal one is not named.
func TestCheckImportsPlanted(t *testing.T) {
	root := repoRoot(t)
	cases := []struct {
		name   string
		plants []plant
		want   []string // regular expressions the output must match
		refuse []string // regular expressions it must not match
	}{
		{
			name: "store imports query: rooms import each other",
			plants: []plant{{"store/planted/planted.go",
				"package planted\n\nimport _ \"" + mod + "/query/dash\"\n"}},
			want: []string{
				`rooms import each other: .*(store -> query|query -> store)`,
				regexp.QuoteMeta(mod + "/store/planted imports " + mod + "/query/dash"),
			},
		},
		{
			name: "query imports store/writer: only ingest writes",
			plants: []plant{{"query/planted/planted.go",
				"package planted\n\nimport _ \"" + mod + "/store/writer\"\n"}},
			want: []string{regexp.QuoteMeta(mod + "/query/planted imports " + mod + "/store/writer: only ingest writes")},
		},
		{
			// The tests' database and sink may import store/writer only
			// because nothing but tests imports it.
			name: "a package imports store/storetest: test support",
			plants: []plant{{"ingest/planted/planted.go",
				"package planted\n\nimport _ \"" + mod + "/store/storetest\"\n"}},
			want:   []string{regexp.QuoteMeta(mod + "/ingest/planted imports " + mod + "/store/storetest: store/storetest is test support, only _test.go files import it")},
			refuse: []string{regexp.QuoteMeta(mod + "/store/storetest imports " + mod + "/store/writer")},
		},
		{
			name: "the ClickHouse driver outside store",
			plants: []plant{{"judge/planted/planted.go",
				"package planted\n\nimport _ \"github.com/ClickHouse/clickhouse-go/v2\"\n"}},
			want: []string{regexp.QuoteMeta(mod + "/judge/planted imports github.com/ClickHouse/clickhouse-go/v2: ClickHouse has one home, store/")},
		},
		{
			name: "a 61-line function in cmd/handoff",
			plants: []plant{{"cmd/handoff/planted.go",
				"package main\n\n" + goFunc("plantedSixtyOne", 61) + "\n" + goFunc("plantedSixty", 60)}},
			want:   []string{`cmd/handoff/planted\.go:3: func plantedSixtyOne\(\) +is 61 lines`},
			refuse: []string{`plantedSixty\(\)`},
		},
		{
			name: "analyzer does I/O",
			plants: []plant{{"analyzer/planted/planted.go",
				"package planted\n\nimport _ \"os\"\n"}},
			want: []string{regexp.QuoteMeta(mod + "/analyzer/planted imports os: analyzer stays pure (no I/O)")},
		},
		{
			name: "model imports another room",
			plants: []plant{{"model/planted/planted.go",
				"package planted\n\nimport _ \"" + mod + "/analyzer/replay\"\n"}},
			want: []string{regexp.QuoteMeta(mod + "/model/planted imports " + mod + "/analyzer/replay: model imports no other room")},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t, root)
			for _, p := range c.plants {
				write(t, dir, p.name, p.text, 0o644)
			}
			out, err := run(t, root, dir, "check-imports.sh")
			if err == nil {
				t.Fatalf("check-imports.sh passed with the violation planted:\n%s", out)
			}
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Errorf("output lacks %s:\n%s", w, out)
				}
			}
			for _, r := range c.refuse {
				if regexp.MustCompile(r).MatchString(out) {
					t.Errorf("output names %s, which is within the rules:\n%s", r, out)
				}
			}
		})
	}
}

// TestCheckStandalone runs deploy/check-standalone.sh on an unplanted copy
// (it must pass: the repository stands alone), on copies with a citation
// planted (it must fail naming the file, the line and the citation), and
// on a copy citing other projects' issues the accepted ways (it must pass).
func TestCheckStandalone(t *testing.T) {
	root := repoRoot(t)
	cases := []struct {
		name   string
		plants []plant
		want   []string // empty: the check must pass
	}{
		{name: "unplanted"},
		{
			name:   "a doc cites the outside design notes",
			plants: []plant{{"docs/planted.md", "# Planted\n\nThe ladder of " + outsideFile + " section 2.\n"}},
			want:   []string{`docs/planted\.md:3: cites "` + regexp.QuoteMeta(outsideFile) + `", a file outside the repository`},
		},
		{
			name:   "a comment cites an issue number",
			plants: []plant{{"model/planted.go", "package model\n\n// see " + ownIssue + "\nconst planted = 1\n"}},
			want:   []string{`model/planted\.go:3: cites "` + ownIssue + `", this project's own issue`},
		},
		{
			name: "an issue number across a comment's line break, and in a test name",
			plants: []plant{{"model/planted_test.go", "package model\n\n// fails on the memory limit (iss" +
				"ue\n// 6)\nfunc TestIss" + "ue7(t *testing.T) {}\n"}},
			want: []string{`model/planted_test\.go:3: cites "iss` + `ue // 6"`, `model/planted_test\.go:5: cites "Iss` + `ue7"`},
		},
		{
			name: "other projects' issues",
			plants: []plant{{"docs/planted.md", "# Planted\n\nSee kafka-go #1378, KAFKA-19444, golang/go#12345,\n" +
				"golang/go iss" + "ue 12345, https://github.com/segmentio/kafka-go/iss" + "ues/1378, and a tiss" + "ue 3 mm thick.\n"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t, root)
			for _, p := range c.plants {
				write(t, dir, p.name, p.text, 0o644)
			}
			out, err := run(t, root, dir, "check-standalone.sh")
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("check-standalone.sh failed: %v\n%s", err, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("check-standalone.sh passed with the citation planted:\n%s", out)
			}
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Errorf("output lacks %s:\n%s", w, out)
				}
			}
			if n, want := strings.Count(out, "check-standalone: "), len(c.want); n != want {
				t.Errorf("%d citations reported, want %d (only the planted ones):\n%s", n, want, out)
			}
		})
	}
}

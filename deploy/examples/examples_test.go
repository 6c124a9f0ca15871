package examples

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/handoff-dev/handoff/internal/testenv"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, md string
		want     []Example
		err      string
	}{
		{"plain sh block runs", "text\n```sh\nhandoff version\n```\n",
			[]Example{{Line: 2, Lang: "sh", Script: "handoff version\n", Mode: Run}}, ""},
		{"other languages are not examples", "```json\n{}\n```\n```\noutput\n```\n```go\nx()\n```\n", nil, ""},
		{"exit marker", "<!-- example: exit 1 -->\n```sh\nhandoff diagnose\n```\n",
			[]Example{{Line: 2, Lang: "sh", Script: "handoff diagnose\n", Mode: Exit, Exit: 1}}, ""},
		{"marker with a blank line before the block", "<!-- example: daemon -->\n\n```bash\nhandoff serve\n```\n",
			[]Example{{Line: 3, Lang: "bash", Script: "handoff serve\n", Mode: Daemon}}, ""},
		{"skip with reason", "<!-- example: skip: a production address -->\n```sh\nhandoff ingest --kafka-brokers kafka-1:9092\n```\n",
			[]Example{{Line: 2, Lang: "sh", Script: "handoff ingest --kafka-brokers kafka-1:9092\n", Mode: Skip, Reason: "a production address"}}, ""},
		{"console: only the $ lines, continuations kept", "```console\n$ handoff a \\\n    --b\nout\n$ handoff c\nmore out\n```\n",
			[]Example{{Line: 1, Lang: "console", Script: "handoff a \\\n    --b\nhandoff c\n", Mode: Run}}, ""},
		{"longer fence holds a shorter one", "````sh\necho '```'\n````\n",
			[]Example{{Line: 1, Lang: "sh", Script: "echo '```'\n", Mode: Run}}, ""},
		{"marker above prose", "<!-- example: exit 1 -->\nsome prose\n```sh\nx\n```\n", nil, "f.md:1: example marker not directly above"},
		{"marker above a json block", "<!-- example: exit 1 -->\n```json\n{}\n```\n", nil, "f.md:1: example marker not directly above"},
		{"marker at the end", "```sh\nx\n```\n<!-- example: daemon -->\n", nil, "f.md:4: example marker not directly above"},
		{"skip without reason", "<!-- example: skip: -->\n```sh\nx\n```\n", nil, "f.md:1: example marker"},
		{"unknown marker", "<!-- example: maybe -->\n```sh\nx\n```\n", nil, "want exit N, daemon or skip: REASON"},
		{"exit out of range", "<!-- example: exit 300 -->\n```sh\nx\n```\n", nil, "exit wants a status 0-255"},
		{"unclosed block", "```sh\nx\n", nil, "never closed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("f.md", strings.NewReader(tt.md))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse: error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range tt.want {
				tt.want[i].File = "f.md"
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("<!-- example: exit 1 -->\n```sh\nx\n```\n")
	f.Add("```console\n$ a \\\nb\n```\n")
	f.Fuzz(func(t *testing.T, md string) {
		exs, err := Parse("f.md", strings.NewReader(md))
		if err != nil {
			return
		}
		for _, e := range exs {
			if e.Line < 1 || !isShell(e.Lang) || (e.Mode == Skip && e.Reason == "") {
				t.Fatalf("Parse(%q): bad example %+v", md, e)
			}
		}
	})
}

// docs are the Markdown files whose examples a reader copies.
func docs(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		out = append(out, rel)
	}
	sort.Strings(out[1:])
	return out
}

// scripts writes one testscript per Markdown file into dir: its examples
// in order, each through the example command, after sub rewrote the
// demo's names into the run's own.
func scripts(t *testing.T, dir, root string, files []string, sub func(string) string) (run, skipped int) {
	t.Helper()
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		exs, err := Parse(rel, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if len(exs) == 0 {
			continue
		}
		var s, archive strings.Builder
		fmt.Fprintf(&s, "# %s: %d examples\ncd $ROOT\n", rel, len(exs))
		for i, e := range exs {
			if e.Mode == Skip {
				fmt.Fprintf(&s, "# %s not run: %s\n", e.Where(), e.Reason)
				skipped++
				continue
			}
			run++
			mode := "run"
			switch e.Mode {
			case Exit:
				mode = fmt.Sprintf("exit:%d", e.Exit)
			case Daemon:
				mode = "daemon"
			}
			name := fmt.Sprintf("ex%03d.sh", i)
			fmt.Fprintf(&s, "example %s %s $WORK/%s\n", mode, e.Where(), name)
			fmt.Fprintf(&archive, "-- %s --\n%s", name, sub(e.Script))
		}
		name := strings.NewReplacer("/", "_", ".md", "").Replace(rel) + ".txtar"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s.String()+archive.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return run, skipped
}

// exampleCmd runs one example with bash in $ROOT and checks how it ended.
// Every example has a time limit, so that one that waits for something
// that never comes fails instead of hanging the suite.
func exampleCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: example run|exit:N|daemon WHERE SCRIPT")
	}
	mode, where, file := args[0], args[1], args[2]
	limit := "180"
	check := `[ "$c" -eq 0 ] || { echo "$where: exit $c, want 0" >&2; exit 1; }`
	switch {
	case mode == "daemon":
		limit = "5"
		check = `[ "$c" -eq 124 ] || [ "$c" -eq 0 ] || { echo "$where: a server example exited $c within 5s" >&2; exit 1; }`
	case strings.HasPrefix(mode, "exit:"):
		want := strings.TrimPrefix(mode, "exit:")
		check = `[ "$c" -eq ` + want + ` ] || { echo "$where: exit $c, want ` + want + `" >&2; exit 1; }`
	}
	wrapper := `where=$1; set +e; timeout -s TERM ` + limit + ` bash -euo pipefail "$2"; c=$?; ` + check
	if err := ts.Exec("bash", "-c", wrapper, "example", where, file); err != nil {
		ts.Fatalf("%s: %v", where, err)
	}
}

// recorder is a testscript.T that records failures instead of failing the
// test, so a test can check that a broken example is caught. A failure
// is kept with what the script logged (testscript logs while unwinding).
type recorder struct {
	mu     sync.Mutex
	failed []string
	fail   bool
	log    strings.Builder
}

type failNow struct{}

func (r *recorder) Skip(args ...any)  { panic(failNow{}) }
func (r *recorder) Fatal(args ...any) { r.Log(args...); r.FailNow() }
func (r *recorder) Parallel()         {}
func (r *recorder) Log(args ...any)   { r.mu.Lock(); fmt.Fprintln(&r.log, args...); r.mu.Unlock() }
func (r *recorder) FailNow()          { r.fail = true; panic(failNow{}) }
func (r *recorder) Verbose() bool     { return false }
func (r *recorder) Run(name string, f func(testscript.T)) {
	sub := &recorder{}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(failNow); !ok {
					panic(v)
				}
			}
		}()
		f(sub)
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	if sub.fail {
		r.failed = append(r.failed, name+": "+sub.log.String())
	}
	r.failed = append(r.failed, sub.failed...)
}

// serial is a testscript.T running the files one after the other: the
// examples share the demo's database and files.
type serial struct{ *testing.T }

func (s serial) Parallel()     {}
func (s serial) Verbose() bool { return testing.Verbose() }
func (s serial) Run(name string, f func(testscript.T)) {
	s.T.Run(name, func(t *testing.T) { f(serial{t}) })
}

// TestBrokenExampleFails plants a broken example and one that exits with
// the wrong status beside good ones: the run must name both, and only them.
func TestBrokenExampleFails(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	md := "# Planted\n```sh\ntrue\n```\n```sh\nhandoff-no-such-command --flag\n```\n" +
		"<!-- example: exit 1 -->\n```sh\nexit 1\n```\n<!-- example: exit 1 -->\n```sh\nexit 3\n```\n" +
		"<!-- example: skip: never runs -->\n```sh\nexit 9\n```\n"
	if err := os.WriteFile(filepath.Join(root, "planted.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	run, skipped := scripts(t, dir, root, []string{"planted.md"}, func(s string) string { return s })
	if run != 4 || skipped != 1 {
		t.Fatalf("planted.md: %d run, %d skipped; want 4 and 1", run, skipped)
	}
	for _, stopAt := range []string{"planted.md:5", "planted.md:13"} {
		rec := &recorder{}
		testscript.RunT(rec, testscript.Params{
			Dir:   dir,
			Setup: func(env *testscript.Env) error { env.Setenv("ROOT", root); return nil },
			Cmds:  map[string]func(*testscript.TestScript, bool, []string){"example": exampleCmd},
		})
		if len(rec.failed) != 1 || !strings.Contains(rec.failed[0], stopAt) {
			t.Fatalf("failures %q, want one naming %s", rec.failed, stopAt)
		}
		// Mend the first failure and run again: the next one must be named.
		b, _ := os.ReadFile(filepath.Join(dir, "planted.txtar"))
		b = bytes.Replace(b, []byte("handoff-no-such-command --flag"), []byte("true"), 1)
		if err := os.WriteFile(filepath.Join(dir, "planted.txtar"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDocsExamples runs every command example of README.md and docs/*.md
// as written, after `make demo`'s script, in a copy of the tracked tree
// with the demo's data and the test services, or checks it is marked with
// the reason it is not run. The demo's database and topic names in the
// examples are rewritten into this run's own.
func TestDocsExamples(t *testing.T) {
	addr, brokers := testenv.ClickHouseAddr(t), strings.Join(testenv.KafkaBrokers(t), ",")
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "handoff_demo_docs")
	topic := testenv.Topic(t, testenv.KafkaBrokers(t), "handoff_demo_docs")
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	copyTracked(t, src, root)
	build := exec.Command("go", "build", "-o", filepath.Join(root, "bin", "handoff"), "./cmd/handoff")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := []string{
		"PATH=" + filepath.Join(root, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HANDOFF_DATA_DIR=" + filepath.Join(root, ".data"),
		"HANDOFF_CLICKHOUSE_ADDR=" + addr, "HANDOFF_KAFKA_BROKERS=" + brokers,
	}
	for _, k := range []string{"HANDOFF_CLICKHOUSE_HTTP_ADDR", "HANDOFF_CHROMIUM", "HANDOFF_CHDB_PYTHON", "HANDOFF_ALERTMANAGER_URLS", "GOPATH", "GOCACHE", "GOMODCACHE", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	demoEnv := append(slicesClone(env), "HANDOFF_BIN="+filepath.Join(root, "bin", "handoff"),
		"HANDOFF_DEMO_DATABASE="+db,
		"HANDOFF_TOPIC="+topic+".events", "HANDOFF_DLQ_TOPIC="+topic+".events.dlq",
		"HANDOFF_FINDINGS_TOPIC="+topic+".findings", "HANDOFF_DIAGNOSES_TOPIC="+topic+".diagnoses",
		"HANDOFF_GROUP="+topic+"_ingest", "HANDOFF_RESULTS_GROUP="+topic+"_results",
		"HANDOFF_METRICS_ADDR=127.0.0.1:0")
	// The reader's environment: the services `make services` started, as
	// it writes them into .data/services.env (the examples source it).
	var senv strings.Builder
	for _, kv := range env[1:] {
		if strings.HasPrefix(kv, "HANDOFF_") {
			fmt.Fprintf(&senv, "export %s\n", kv)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, ".data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".data", "services.env"), []byte(senv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	demo := exec.CommandContext(ctx, "bash", "deploy/demo/demo.sh")
	demo.Dir, demo.Env = root, demoEnv
	if out, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("the demo, which the examples build on: %v\n%s", err, out)
	}

	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("HANDOFF_CLICKHOUSE_ADDR %q: %v", addr, err)
	}
	dbName := regexp.MustCompile(`\bhandoff_demo\b`)
	sub := func(s string) string {
		s = dbName.ReplaceAllString(s, db)
		s = strings.ReplaceAll(s, "handoff.demo.", topic+".")
		s = strings.ReplaceAll(s, "127.0.0.1:19000", addr)
		s = strings.ReplaceAll(s, "--port 19000", "--host "+host+" --port "+port)
		return strings.ReplaceAll(s, "127.0.0.1:19092", brokers)
	}
	dir := t.TempDir()
	run, skipped := scripts(t, dir, root, docs(t, root), sub)
	t.Logf("%d examples run, %d marked as not run", run, skipped)
	testscript.RunT(serial{t}, testscript.Params{
		Dir: dir,
		Setup: func(e *testscript.Env) error {
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				e.Setenv(k, v)
			}
			e.Setenv("ROOT", root)
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"example": exampleCmd},
	})
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// copyTracked copies the files git tracks in src (the work tree's
// content, uncommitted edits included) into dst.
func copyTracked(t *testing.T, src, dst string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = src
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if rel == "" {
			continue
		}
		from := filepath.Join(src, rel)
		info, err := os.Lstat(from)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or not a file
		}
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

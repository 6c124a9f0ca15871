package hostile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/storetest"
)

// bin is the handoff binary built for the suite.
var bin string

// TestMain builds the binary, or takes HANDOFF_HOSTILE_BIN: the suite
// run against another build (an older release) shows what it fixed.
func TestMain(m *testing.M) {
	if b := os.Getenv("HANDOFF_HOSTILE_BIN"); b != "" {
		bin = b
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "handoff-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	bin = filepath.Join(dir, "handoff")
	build := exec.Command("go", "build", "-o", bin, "github.com/handoff-dev/handoff/cmd/handoff")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build handoff:", err)
		os.Exit(3)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

// handoff runs the binary with args and env (added to a clean copy of the
// environment, without the HANDOFF_ variables of the caller unless keep).
func handoff(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HANDOFF_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("handoff %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// repo is the repository root (the suite runs in deploy/hostile).
const repo = "../.."

// TestSecretsNeverPrinted: a secret in the environment is never printed by
// -h, nor by the usage a mistyped flag prints (a unit file's typo would put
// it in the journal), for any command.
func TestSecretsNeverPrinted(t *testing.T) {
	const secret = "hostile-s3cret-4711"
	env := []string{"HANDOFF_WEBHOOK_SECRET=" + secret, "HANDOFF_CLICKHOUSE_PASSWORD=" + secret}
	cmds := regexp.MustCompile(`(?m)^  ([a-z-]+) `).FindAllStringSubmatch(handoff(t, nil, "help").stderr, -1)
	if len(cmds) < 10 {
		t.Fatalf("handoff help lists %d commands", len(cmds))
	}
	for _, c := range cmds {
		for _, args := range [][]string{{c[1], "-h"}, {c[1], "--no-such-flag"}} {
			r := handoff(t, env, args...)
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("handoff %s printed the secret:\n%s", strings.Join(args, " "), r.stderr)
			}
		}
	}
}

// TestTimeFlagsRangeChecked: a time flag at the ends of the calendar is a
// usage error naming the flag (detect --now 0001-01-01 used to overflow to
// 1734), before anything connects.
func TestTimeFlagsRangeChecked(t *testing.T) {
	events := write(t, filepath.Join(t.TempDir(), "e.jsonl"), "")
	for _, tt := range []struct {
		flag string
		args []string
	}{
		{"--now", []string{"detect", "--now", "0001-01-01T00:00:00Z", "--kafka-brokers", "127.0.0.1:1", "--contract", repo + "/deploy/contracts"}},
		{"--now", []string{"detect", "--now", "9999-12-31T23:59:59Z", "--kafka-brokers", "127.0.0.1:1", "--contract", repo + "/deploy/contracts"}},
		{"--as-of", []string{"diagnose", "--events", events, "--as-of", "0001-01-01T00:00:00Z"}},
		// The zero time, which emit used to replace silently with now.
		{"--time", []string{"emit", "--kafka-brokers", "127.0.0.1:1", "--type", "job.started", "--pipeline", "p.daily", "--business-date", "2026-09-30",
			"--batch-id", "20260930", "--system", "producer", "--component", "c", "--time", "0001-01-01T00:00:00Z"}},
		{"--as-of", []string{"findings", "--as-of", "0001-01-01T00:00:00Z", "--clickhouse-addr", "127.0.0.1:1"}},
		{"--as-of", []string{"verify", "--batch", "account-balance-snapshot.daily/2026-09-30/20260930", "--dir", t.TempDir(),
			"--contract", repo + "/deploy/contracts", "--events", events, "--as-of", "1969-12-31T23:59:59Z"}},
	} {
		args, flag := tt.args, tt.flag
		r := handoff(t, nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, flag) || !strings.Contains(r.stderr, "out of range") {
			t.Errorf("handoff %s: exit %d, stderr %q; want exit 2 naming %s out of range", strings.Join(args, " "), r.code, r.stderr, flag)
		}
	}
}

// rawControl finds a control character a terminal acts on, or a bidi
// control, in s.
var rawControl = regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]")

// TestTerminalEscapes: events whose error holds screen-clear, window-title
// and OSC 52 clipboard sequences, and lines whose identity fields hold C0,
// C1 or bidi controls, never reach the terminal raw: diagnose escapes the
// first and refuses the others, saying so escaped.
func TestTerminalEscapes(t *testing.T) {
	dir := t.TempDir()
	seed, err := os.ReadFile(repo + "/deploy/demo/seed-case.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	hostile := []string{
		`{"spec":"handoff/v1","event_id":"h-1","type":"consume.failed","time":"2026-10-01T00:10:00.000Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"consumer","component":"c1","error":"boom\u001b[2J\u001b[H\u001b]0;pwned\u0007\u001b]52;c;Y3VybCBldmlsfHNo\u0007\u202eexe.txt"}`,
		`{"spec":"handoff/v1","event_id":"h-2","type":"job.started","time":"2026-10-01T00:10:00.000Z","pipeline":"abs\u009b2Jdaily","business_date":"2026-09-30","batch_id":"20260930","system":"producer","component":"c"}`,
		`{"spec":"handoff/v1","event_id":"h-3","type":"job.started","time":"2026-10-01T00:10:00.000Z","pipeline":"x.daily","business_date":"2026-09-30","batch_id":"20260930","system":"producer","component":"c\u001b[31m"}`,
		`{"spec":"handoff/v1","event_id":"h-4","type":"job.started","time":"2026-10-01T00:10:00.000Z","pipeline":"evil\u202ex","business_date":"2026-09-30","batch_id":"20260930","system":"producer","component":"c"}`,
	}
	events := write(t, filepath.Join(dir, "e.jsonl"), string(seed)+strings.Join(hostile, "\n")+"\n")
	for _, format := range []string{"text", "json"} {
		r := handoff(t, nil, "diagnose", "--events", events, "--contract", repo+"/deploy/contracts", "--as-of", "2026-10-03T00:00:00Z", "--format", format)
		if r.code > 1 {
			t.Fatalf("diagnose --format %s: exit %d: %s", format, r.code, r.stderr)
		}
		if m := rawControl.FindString(r.stdout + r.stderr); m != "" {
			t.Errorf("diagnose --format %s printed %q raw", format, m)
		}
		if !strings.Contains(r.stdout, `boom\x1b[2J`) && !strings.Contains(r.stdout, `boom\u001b[2J`) {
			t.Errorf("diagnose --format %s: the error's escape sequence is not shown escaped:\n%.2000s", format, r.stdout)
		}
	}
	r := handoff(t, nil, "diagnose", "--events", events, "--contract", repo+"/deploy/contracts", "--as-of", "2026-10-03T00:00:00Z")
	for _, want := range []string{`:19: pipeline "abs\u009b2Jdaily"`, `:20: component "c\x1b[31m"`, `:21: pipeline "evil\u202ex"`, "3 lines rejected"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("diagnose does not refuse, escaped, %s:\n%s", want, r.stderr)
		}
	}
}

const olContract = `pipeline: %s
schedule: daily
batch_id: "{yyyymmdd}"
artifact: "%s_{batch_id}.csv"
openlineage:
  job: "%s"
  business_date: event_time
`

// TestOpenLineageHostileFile: a file of run events with a line over 1 MiB,
// duplicate keys, year 1, 1e30 rows, a NUL in the run id and events that
// prove nothing: every bad line is reported with its number and reason,
// the rest is read and mapped, nothing with a control character is
// printed, and the summary adds up.
func TestOpenLineageHostileFile(t *testing.T) {
	dir := t.TempDir()
	c := write(t, filepath.Join(dir, "c", "p.yaml"), fmt.Sprintf(olContract, "p.daily", "p", "build_p"))
	line := func(extra string) string {
		return `{"eventType":"START","eventTime":"2026-09-30T01:00:00Z","run":{"runId":"r1"},"job":{"namespace":"a","name":"build_p"}` + extra + `}`
	}
	lines := []string{
		line(""), // 1 mapped
		line(`,"pad":"` + strings.Repeat("x", 1<<20+10) + `"`),                                        // 2 too long
		strings.Replace(line(""), `"eventType":"START"`, `"eventType":"START","eventType":"FAIL"`, 1), // 3 duplicate
		strings.Replace(line(""), "2026-09-30T01:00:00Z", "0001-01-01T00:00:00Z", 1),                  // 4 year 1
		`{"eventType":"COMPLETE","eventTime":"2026-09-30T02:00:00Z","run":{"runId":"r1"},"job":{"namespace":"a","name":"build_p"},"outputs":[{"namespace":"f","name":"p_20260930.csv","outputFacets":{"outputStatistics":{"rowCount":1e30}}}]}`, // 5 1e30
		strings.Replace(line(""), `"runId":"r1"`, `"runId":"r\u00001"`, 1), // 6 NUL
		strings.Replace(line(""), `"eventType":"START",`, ``, 1),           // 7 no eventType: nothing
		strings.Replace(line(""), `"START"`, `"RUNNING"`, 1),               // 8 nothing
		strings.Replace(line(""), `"START"`, `"COMPLETE"`, 1),              // 9 mapped
	}
	file := write(t, filepath.Join(dir, "ol.jsonl"), strings.Join(lines, "\n")+"\n")
	r := handoff(t, nil, "openlineage", "--contract", filepath.Dir(c), "--file", file, "--print")
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (some lines bad): %s", r.code, r.stderr)
	}
	for n, why := range map[int]string{2: "over the", 3: "duplicate key", 4: "outside 1970-01-01", 5: "want a whole number", 6: "control character"} {
		if !strings.Contains(r.stderr, fmt.Sprintf("%s:%d: ", file, n)) || !strings.Contains(r.stderr, why) {
			t.Errorf("line %d is not reported with %q:\n%.3000s", n, why, r.stderr)
		}
	}
	if got := strings.Count(r.stdout, "\n"); got != 2 || !strings.Contains(r.stdout, `"job.succeeded"`) {
		t.Errorf("%d mapped events printed, want 2 (lines 1 and 9, the last after the long line):\n%s", got, r.stdout)
	}
	if !strings.Contains(r.stderr, "9 run events read, 2 handoff events mapped, 5 rejected, 0 of jobs no contract claims, 2 proving no boundary") {
		t.Errorf("the summary does not add up:\n%.3000s", r.stderr)
	}
	if m := rawControl.FindString(r.stdout + r.stderr); m != "" {
		t.Errorf("printed %q raw", m)
	}
}

// TestOpenLineageOverlappingClaims: two contracts claiming one job, or a
// literal claim another's template matches, refuse to start naming both
// files.
func TestOpenLineageOverlappingClaims(t *testing.T) {
	for _, jobs := range [][2]string{{"build_x", "build_x"}, {"build_20260930", "build_{yyyymmdd}"}} {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "one.yaml"), fmt.Sprintf(olContract, "one.daily", "one", jobs[0]))
		write(t, filepath.Join(dir, "two.yaml"), fmt.Sprintf(olContract, "two.daily", "two", jobs[1]))
		file := write(t, filepath.Join(t.TempDir(), "ol.jsonl"), "")
		r := handoff(t, nil, "openlineage", "--contract", dir, "--file", file, "--print")
		if r.code != 2 || !strings.Contains(r.stderr, "one.yaml") || !strings.Contains(r.stderr, "two.yaml") {
			t.Errorf("jobs %q: exit %d, stderr %q; want exit 2 naming one.yaml and two.yaml", jobs, r.code, r.stderr)
		}
	}
}

// TestBatchTraversal: --batch keys that climb out of the receiver write
// nothing anywhere: refused as keys (a '/' too many, an absolute path), or,
// for a batch id "..", which names no path (the signal's name is rendered
// from it), found to have no events.
func TestBatchTraversal(t *testing.T) {
	dir := t.TempDir()
	recv := filepath.Join(dir, "recv")
	os.MkdirAll(recv, 0o755)
	events := write(t, filepath.Join(dir, "e.jsonl"), "")
	for _, key := range []string{"../../etc/2026-09-30/20260930", "account-balance-snapshot.daily/2026-09-30/../../x", "account-balance-snapshot.daily/2026-09-30/..", "/etc/passwd"} {
		for _, cmd := range []string{"restore-signal", "verify"} {
			r := handoff(t, nil, cmd, "--batch", key, "--dir", recv, "--contract", repo+"/deploy/contracts", "--events", events, "--apply", "--reason", "x")
			if cmd == "verify" {
				r = handoff(t, nil, cmd, "--batch", key, "--dir", recv, "--contract", repo+"/deploy/contracts", "--events", events)
			}
			if r.code == 0 || (r.code == 2) != strings.Contains(r.stderr, "--batch") {
				t.Errorf("%s --batch %q: exit %d, stderr %q; want a refusal", cmd, key, r.code, r.stderr)
			}
		}
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir && p != recv && p != events {
			t.Errorf("%s was written", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatchHostileTree: `watch --once` over a tree with links named like a
// batch's files pointing out of it, a 2 GiB sparse signal and a signal with
// a forged restore mark reports only what is really there: the links are
// never read, the huge signal is refused by its size, the forged mark does
// not hide its signal.
func TestWatchHostileTree(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.Topic(t, brokers, "hostile_watch")
	dir := t.TempDir()
	tree := filepath.Join(dir, "live")
	outside := write(t, filepath.Join(dir, "secret", "passwd"), "root:x:0:0:root:/root:/bin/sh\n")
	os.MkdirAll(tree, 0o755)
	for _, name := range []string{"account_balance_snapshot_20261120.csv", "account_balance_snapshot_20261121.flag"} {
		if err := os.Symlink(outside, filepath.Join(tree, name)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(tree, "account_balance_snapshot_20261122.flag"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(2 << 30)
	f.Close()
	forged := write(t, filepath.Join(tree, "account_balance_snapshot_20261123.flag"), "")
	if err := unix.Setxattr(forged, "user.handoff.restored", []byte("forged"), 0); err != nil {
		t.Fatalf("setxattr user.handoff.restored on %s (the temporary directory's file system must keep user xattrs): %v", forged, err)
	}
	r := handoff(t, nil, "watch", "--once", "--role", "receiver", "--dir", tree, "--contract", repo+"/deploy/contracts",
		"--kafka-brokers", strings.Join(brokers, ","), "--topic", topic, "--settle", "50ms")
	if r.code != 0 {
		t.Fatalf("watch --once: exit %d: %s", r.code, r.stderr)
	}
	emitted := regexp.MustCompile(`msg="watch: emitted" .*object=(\S+)`).FindAllStringSubmatch(r.stderr, -1)
	if len(emitted) != 1 || emitted[0][1] != "account_balance_snapshot_20261123.flag" {
		t.Errorf("emitted %v; want only the signal with the forged mark:\n%s", emitted, r.stderr)
	}
	if !strings.Contains(r.stderr, "over the limit") || !strings.Contains(r.stderr, "not proven") {
		t.Errorf("the log does not say the huge signal was refused and the mark not proven:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "root:x") {
		t.Errorf("the content of a file outside the tree reached the log")
	}
}

// TestBackfillDoesNotPublishUnasked: with Kafka configured by the
// environment (as the docs have users source it) and no --publish,
// backfill publishes nothing: Kafka here is a port nobody listens on, so
// an attempt would fail the run.
func TestBackfillDoesNotPublishUnasked(t *testing.T) {
	db := storetest.NewDB(t, "hostile_backfill").Name
	env := []string{"HANDOFF_KAFKA_BROKERS=127.0.0.1:1", "HANDOFF_CLICKHOUSE_ADDR=" + testenv.ClickHouseAddr(t)}
	r := handoff(t, env, "backfill", "--clickhouse-database", db, "--from", "2026-09-29", "--to", "2026-09-30",
		"--contract", repo+"/deploy/contracts", "--as-of", "2026-10-03T00:00:00Z")
	if r.code != 0 || strings.Contains(r.stdout, "published") {
		t.Errorf("backfill without --publish: exit %d, stdout %q, stderr %q; want exit 0, nothing published", r.code, r.stdout, r.stderr)
	}
	r = handoff(t, env, "backfill", "--clickhouse-database", db, "--from", "2026-09-29", "--to", "2026-09-30",
		"--contract", repo+"/deploy/contracts", "--as-of", "2026-10-03T00:00:00Z", "--publish")
	if r.code != 3 || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("backfill --publish to a broker that is not there: exit %d, stderr %q; want exit 3 naming it", r.code, r.stderr)
	}
}

// TestSuiteCasesExist: the hostile cases that live beside their packages
// still exist under their names; renaming or removing one must be a
// decision, not an accident.
func TestSuiteCasesExist(t *testing.T) {
	cases := map[string][]string{
		"internal/cliflag/cliflag_test.go":        {"TestSecretNeverPrinted", "TestParseTime"},
		"notify/redirect_test.go":                 {"TestWebhookRedirectNotDelivered"},
		"notify/alert_test.go":                    {"TestSignature"},
		"notify/docs_test.go":                     {"TestDocsShellVerification"},
		"ingest/files/files_test.go":              {"TestProbe", "TestReadSmall"},
		"ingest/watch/hostile_test.go":            {"TestWatchForgedRestoredMark", "TestWatchRunningNeverFollowsLinks", "TestWatchHugeSignal"},
		"ingest/lineage/hostile_internal_test.go": {"TestLinesLongLineAndNothing", "TestClaimsConflict"},
		"model/openlineage/openlineage_test.go":   {"TestDecodeHostile"},
		"model/text_test.go":                      {"TestEscapeText", "TestTextWriterSplitWrites", "TestValidateRejectsControls"},
		"query/findings/output_test.go":           {"TestTextEscapesControls"},
		"query/serve/api_test.go":                 {"TestHostileParams", "TestQuotedPipelineIsBound", "TestReadonlyUser"},
		"query/serve/hostile_test.go": {"TestHostileStoredText", "TestHostileStoredTextInBrowser", "TestSecurityHeaders", "TestHostileParamsEveryRoute",
			"TestStaticOnlyStylesheet", "TestServicesReadonlyUser"},
		"judge/live/config_test.go": {"0001-01-01T00:00:00Z"},
	}
	for file, names := range cases {
		b, err := os.ReadFile(filepath.Join(repo, file))
		if err != nil {
			t.Errorf("hostile cases of %s: %v", file, err)
			continue
		}
		for _, n := range names {
			if !bytes.Contains(b, []byte(n)) {
				t.Errorf("%s no longer has %s, a case of the hostile suite", file, n)
			}
		}
	}
}

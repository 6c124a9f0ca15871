package consumer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// privateKafka is a real Apache Kafka broker of this test alone, run by
// deploy/services/kafka.sh on free ports and in a data dir of its own, so
// the test can stop and start it without disturbing the shared broker.
// (A proxy in front of the shared broker cannot simulate an outage: Kafka
// clients connect to the listener the broker advertises in metadata.)
type privateKafka struct {
	script string
	dir    string
	addr   string
	env    []string
}

// startPrivateKafka starts the broker and registers its stop (and the
// removal of its data dir) as cleanup.
func startPrivateKafka(t *testing.T) *privateKafka {
	t.Helper()
	testenv.Integration(t)
	root := repoRoot(t)
	dir := t.TempDir() // removed at cleanup, after the stop registered below
	port, ctrl := freePort(t), freePort(t)
	for port == ctrl {
		ctrl = freePort(t)
	}
	k := &privateKafka{
		script: filepath.Join(root, "deploy", "services", "kafka.sh"),
		dir:    dir,
		addr:   "127.0.0.1:" + strconv.Itoa(port),
		env: []string{
			"HANDOFF_DATA_DIR=" + dir,
			"HANDOFF_KAFKA_HOST=127.0.0.1",
			"HANDOFF_KAFKA_PORT=" + strconv.Itoa(port),
			"HANDOFF_KAFKA_CONTROLLER_PORT=" + strconv.Itoa(ctrl),
			"HANDOFF_KAFKA_START_TIMEOUT=240", // a busy 2-core machine needs minutes
			"HANDOFF_KAFKA_HEAP_OPTS=-Xms128m -Xmx512m",
		},
	}
	// The jars: reuse the shared data dir's when they are installed for the
	// chosen version (HANDOFF_KAFKA_VERSION; the stamp in libs/<version>
	// says from which pom), else kafka.sh fetches them with Maven (from
	// ~/.m2 after the first install: a few seconds, minutes on a busy
	// machine).
	shared := os.Getenv("HANDOFF_DATA_DIR")
	if shared == "" {
		shared = filepath.Join(root, ".data")
	}
	if libs, ok := installedJars(t, k.script, shared); ok {
		if err := os.MkdirAll(filepath.Join(dir, "kafka", "libs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(libs, filepath.Join(dir, "kafka", "libs", filepath.Base(libs))); err != nil {
			t.Fatal(err)
		}
		t.Logf("private broker: jars of %s, data %s", libs, dir)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "kafka", "logs", "server.log")); err == nil {
				t.Logf("private broker log (last 4 KiB):\n%s", tail(b, 4<<10))
			}
		}
		k.run(t, "stop")
	})
	k.run(t, "start")
	return k
}

// run runs kafka.sh cmd for this broker and fails the test when it fails.
func (k *privateKafka) run(t *testing.T, cmd string) {
	t.Helper()
	start := time.Now()
	// A bound for a hung script, not a measure: kafka.sh start waits up
	// to HANDOFF_KAFKA_START_TIMEOUT itself.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", k.script, cmd)
	c.Env = append(os.Environ(), k.env...) // later entries win
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		t.Fatalf("kafka.sh %s (broker %s): %v\n%s", cmd, k.addr, err, out.String())
	}
	t.Logf("kafka.sh %s: %v", cmd, time.Since(start).Round(10*time.Millisecond))
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "deploy", "services", "kafka.sh")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root (go.mod and deploy/services/kafka.sh) not found above the working directory")
		}
		dir = parent
	}
}

// jarsCurrent: libs holds jars installed by kafka.sh from the current
// deploy/kafka/pom.xml (its stamp is the pom's SHA-256).
// installedJars is the jar directory kafka.sh would use in the shared
// data dir for the chosen version, and whether its stamp matches the pom
// and that version (kafka.sh's own rule).
func installedJars(t *testing.T, script, shared string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", script, "libs")
	c.Env = append(os.Environ(), "HANDOFF_DATA_DIR="+shared)
	out, err := c.Output()
	if err != nil {
		return "", false
	}
	libs := strings.TrimSpace(string(out))
	pom, err := os.ReadFile(filepath.Join(filepath.Dir(script), "..", "kafka", "pom.xml"))
	if err != nil {
		return "", false
	}
	stamp, err := os.ReadFile(filepath.Join(libs, ".installed"))
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(pom)
	fields := strings.Fields(string(stamp))
	return libs, len(fields) == 2 && fields[0] == hex.EncodeToString(sum[:]) && fields[1] == filepath.Base(libs)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// freePort returns a loopback TCP port that was free a moment ago
// (kafka.sh refuses to start when it has been taken since).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// logRecorder is a slog handler that keeps the messages (with their err
// attribute) so the test can wait for the ingester to report something.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
	next  slog.Handler
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(ctx context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" || a.Key == "stage" {
			line += " " + a.Key + "=" + a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, line)
	h.mu.Unlock()
	if h.next != nil && h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// since returns the lines logged after the first n.
func (h *logRecorder) since(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.lines[n:]...)
}

func (h *logRecorder) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.lines)
}

// TestKafkaDown: the test's own broker is stopped while the ingester runs
// and started again, twice. The ingester notices (fetch errors), stays up,
// stores nothing new while idle, and recovers by itself without a restart:
//
//  1. Outage while idle: the events sent after the restart (valid, each
//     twice, and malformed, so both the group reader and the dead-letter
//     writer must have reconnected) are all stored and committed.
//  2. Outage while holding a batch (ClickHouse cut too, then restored
//     before Kafka): the batch is stored while Kafka is down, and its
//     offsets are committed once the broker is back.
//
// Nothing is lost or doubled (count FINAL = distinct event ids = events
// sent), and after a graceful stop every offset is committed.
func TestKafkaDown(t *testing.T) {
	testStart := time.Now()
	chAddr := testenv.ClickHouseAddr(t)
	conn := testenv.ClickHouse(t)
	k := startPrivateKafka(t)
	s := &setup{brokers: []string{k.addr}, chAddr: chAddr, conn: conn}
	s.db = testenv.Database(t, conn, "kafkadown")
	s.topic = "test." + s.db
	s.dlq = s.topic + ".dlq"
	s.group = s.db
	const pipeline = "pipe.kafkadown"
	brokerUp := time.Since(testStart)

	rec := &logRecorder{}
	if os.Getenv("HANDOFF_TEST_LOG") != "" {
		rec.next = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	reg := prometheus.NewRegistry()
	cfg := s.config()
	chProxy := testenv.NewProxy(t, chAddr) // cut in the second outage
	cfg.ClickHouse.Addr = chProxy.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nctx, ncancel := context.WithTimeout(ctx, time.Minute)
	c, err := consumer.New(nctx, cfg, consumer.Options{Logger: slog.New(rec), Registry: reg})
	ncancel()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	stop := func() error {
		stopped = true
		cancel()
		defer c.Close()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			return errors.New("Run did not return within a minute of the cancel")
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
		if t.Failed() {
			t.Logf("ingester log:\n%s", strings.Join(rec.since(0), "\n"))
		}
	})
	running := func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("the ingester stopped by itself: Run returned %v", err)
		default:
			return nil
		}
	}

	q := "SELECT count() FROM " + s.db + ".events FINAL"
	qDistinct := "SELECT uniqExact(event_id) FROM " + s.db + ".events"
	qDead := "SELECT count() FROM " + s.db + ".dead_letters FINAL"

	// Before the outage: valid events (each twice) and malformed messages,
	// so the dead-letter writer has connections to the broker too.
	before := testenv.Events(1000, pipeline, 11)
	bad1, _ := malformed(pipeline)
	w1 := writer(t, s.brokers, s.topic)
	produce(t, w1, append(twiceShuffled(before, 1), bad1...))
	waitCount(t, conn, time.Minute, uint64(len(before)), q)
	waitCount(t, conn, time.Minute, uint64(len(bad1)), qDead)
	testenv.Eventually(t, time.Minute, "offsets committed before the outage", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})
	w1.Close()
	committedBefore := metricValue(t, reg, "handoff_ingest_committed_total")
	beforeDone := time.Since(testStart)

	// The outage.
	logMark := rec.len()
	fetchErrs := metricValue(t, reg, "handoff_ingest_errors_total", "stage", "fetch")
	k.run(t, "stop")
	outageStart := time.Now()
	// Down "for a while": until the group reader has given up rejoining
	// twice (each fetch error is MaxAttempts failed joins).
	testenv.Eventually(t, time.Minute, "the ingester notices that Kafka is down (handoff_ingest_errors_total{stage=fetch} +2)", func() (bool, string) {
		if err := running(); err != nil {
			t.Fatal(err)
		}
		v := metricValue(t, reg, "handoff_ingest_errors_total", "stage", "fetch")
		return v >= fetchErrs+2, fmt.Sprintf("fetch errors %v (before the outage %v); %d lines logged", v, fetchErrs, len(rec.since(logMark)))
	})
	noticed := time.Since(outageStart)
	if err := running(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, conn, q); n != uint64(len(before)) {
		t.Fatalf("while Kafka is down: %d events stored, want %d", n, len(before))
	}
	if v := metricValue(t, reg, "handoff_ingest_committed_total"); v != committedBefore {
		t.Fatalf("while Kafka is down: committed_total went from %v to %v", committedBefore, v)
	}

	// Back up: the same broker (same ports, same data).
	k.run(t, "start")
	restartDone := time.Now()
	after := testenv.Events(2000, pipeline+"-after", 12)
	bad2, _ := malformed(pipeline)
	w2 := writer(t, s.brokers, s.topic)
	produce(t, w2, append(twiceShuffled(after, 2), bad2...))
	total := uint64(len(before) + len(after))
	waitCount(t, conn, time.Minute, total, q)
	if n := count(t, conn, qDistinct); n != total {
		t.Fatalf("distinct event ids = %d, want %d", n, total)
	}
	waitCount(t, conn, time.Minute, uint64(len(bad1)+len(bad2)), qDead)
	testenv.Eventually(t, time.Minute, "all offsets committed after the outage", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})
	recovered := time.Since(restartDone)
	if dlq := readAll(t, s.brokers, s.dlq); len(dlq) < len(bad1)+len(bad2) {
		t.Fatalf("dead-letter topic has %d messages, want at least %d", len(dlq), len(bad1)+len(bad2))
	}

	// Second outage, while the ingester holds a batch it has read but not
	// stored (ClickHouse cut too): ClickHouse comes back first, so the
	// batch is stored while Kafka is down and its commit has to wait for
	// the broker.
	chProxy.SetDown(true)
	held := testenv.Events(500, pipeline+"-held", 13)
	produce(t, w2, twiceShuffled(held, 3))
	insertErrs := metricValue(t, reg, "handoff_ingest_errors_total", "stage", "insert")
	testenv.Eventually(t, time.Minute, "inserts failing while ClickHouse is cut", func() (bool, string) {
		v := metricValue(t, reg, "handoff_ingest_errors_total", "stage", "insert")
		return v >= insertErrs+2, fmt.Sprintf("%v failed inserts", v)
	})
	w2.Close()
	fetchErrs = metricValue(t, reg, "handoff_ingest_errors_total", "stage", "fetch")
	k.run(t, "stop")
	testenv.Eventually(t, time.Minute, "fetch errors while Kafka is down the second time", func() (bool, string) {
		if err := running(); err != nil {
			t.Fatal(err)
		}
		v := metricValue(t, reg, "handoff_ingest_errors_total", "stage", "fetch")
		return v >= fetchErrs+1, fmt.Sprintf("fetch errors %v", v)
	})
	chProxy.SetDown(false)
	// What the ingester had read is stored although Kafka is down (the
	// messages it had not read yet, if any, come after the restart).
	testenv.Eventually(t, time.Minute, "the held batch stored while Kafka is down", func() (bool, string) {
		n := count(t, conn, q)
		return n > total, fmt.Sprintf("%d stored, %d before the second outage", n, total)
	})
	total += uint64(len(held))
	k.run(t, "start")
	restartDone = time.Now()
	waitCount(t, conn, time.Minute, total, q)
	testenv.Eventually(t, time.Minute, "all offsets committed after the second outage", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})
	if n := count(t, conn, qDistinct); n != total {
		t.Fatalf("distinct event ids = %d, want %d", n, total)
	}
	recovered2 := time.Since(restartDone)

	// Graceful stop: flush, commit, nil.
	if err := stop(); err != nil {
		t.Fatalf("graceful stop after the outage: %v", err)
	}
	if n := uncommitted(t, s.brokers, s.group, s.topic); n != 0 {
		t.Fatalf("after the graceful stop: %d messages uncommitted, want 0", n)
	}
	if n := count(t, conn, q); n != total {
		t.Fatalf("count FINAL = %d after stop, want %d", n, total)
	}
	ms := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	t.Logf("broker up after %v, first events stored and committed at %v; outage 1 noticed after %v, all stored and committed %v after the restart; "+
		"outage 2 (held batch) committed %v after the restart; fetch errors %v, commit errors %v",
		ms(brokerUp), ms(beforeDone), ms(noticed), ms(recovered), ms(recovered2),
		metricValue(t, reg, "handoff_ingest_errors_total", "stage", "fetch"), metricValue(t, reg, "handoff_ingest_errors_total", "stage", "commit"))
}

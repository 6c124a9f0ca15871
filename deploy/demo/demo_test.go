// Package demo_test runs `make demo`'s script, deploy/demo/demo.sh, on the
// real ClickHouse and Kafka of the test services, twice: the second run
// must tell the same story as the first, from the seed's state, with
// nothing recorded twice.
package demo_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
)

// steps are the seven lines of the story, in order, as the demo prints them.
var steps = []string{
	`[1/7] events: the seed's 17 events went through Kafka into ClickHouse`,
	`[2/7] diagnose: 20260929 delivered; 20260930 produced, final and at the receiver, but its flag never arrived: not_identified, first missing signal_delivered`,
	`[3/7] detect: 20260930 overdue at signal_delivered (not_identified); 2026-10-01 and 2026-10-02 expected and never sent an event: missing`,
	`[4/7] prove: `,
	`[5/7] restore: account_balance_snapshot_20260930.flag is at the receiver`,
	`[6/7] consume: the consumer saw the flag, identified 2026-09-30/20260930 and consumed 120345 rows`,
	`[7/7] verify: `,
}

func TestDemoTwice(t *testing.T) {
	addr, brokers := testenv.ClickHouseAddr(t), testenv.KafkaBrokers(t)
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "handoff_demo_test")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "handoff")
	build := exec.Command("go", "build", "-o", bin, "./cmd/handoff")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := t.TempDir()
	flag := filepath.Join(data, "demo", "files", "inbox", "finance", "account_balance_snapshot_20260930.flag")
	for run := 1; run <= 2; run++ {
		// Each run has topics of its own, as the demo gives itself on an
		// external Kafka; the database is the same, dropped by each run.
		topic := testenv.Topic(t, brokers, "handoff_demo_test")
		env := append(os.Environ(),
			"HANDOFF_BIN="+bin, "HANDOFF_DATA_DIR="+data,
			"HANDOFF_CLICKHOUSE_ADDR="+addr, "HANDOFF_CLICKHOUSE_DATABASE="+db,
			"HANDOFF_KAFKA_BROKERS="+strings.Join(brokers, ","),
			"HANDOFF_TOPIC="+topic+".events", "HANDOFF_DLQ_TOPIC="+topic+".dlq",
			"HANDOFF_FINDINGS_TOPIC="+topic+".findings", "HANDOFF_DIAGNOSES_TOPIC="+topic+".diagnoses",
			"HANDOFF_GROUP="+topic+"_ingest", "HANDOFF_RESULTS_GROUP="+topic+"_results",
			"HANDOFF_METRICS_ADDR=127.0.0.1:0")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "deploy/demo/demo.sh")
		cmd.Dir, cmd.Env = root, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("run %d: demo.sh: %v\n%s", run, err, out.String())
		}
		text := out.String()
		at := 0
		for _, s := range steps {
			i := strings.Index(text[at:], s)
			if i < 0 {
				t.Fatalf("run %d: the story lacks %q after byte %d:\n%s", run, s, at, text)
			}
			at += i + len(s)
		}
		for _, want := range []string{
			"every precondition is proven",
			"restored account_balance_snapshot_20260930.flag",
			"every check passed: account-balance-snapshot.daily/2026-09-30/20260930 is delivered end to end",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("run %d: output lacks %q", run, want)
			}
		}
		if _, err := os.Stat(flag); err != nil {
			t.Errorf("run %d: the restored flag: %v", run, err)
		}
		verify := text[strings.LastIndex(text, "\nverify account-balance-snapshot.daily/2026-09-30/20260930"):]
		if n := len(regexp.MustCompile(`(?m)^\s+\[pass\]`).FindAllString(verify, -1)); n != 7 {
			t.Errorf("run %d: verify printed %d passing checks, want 7:\n%s", run, n, verify)
		}
	}
	// The second run started from the seed's state: one consume.succeeded.
	ctx := context.Background()
	var n, ids uint64
	if err := conn.QueryRow(ctx, "SELECT count(), uniqExact(event_id) FROM "+db+".events WHERE pipeline = 'account-balance-snapshot.daily' AND type = 'consume.succeeded' AND batch_id = '20260930'").Scan(&n, &ids); err != nil {
		t.Fatal(err)
	}
	if ids != 1 {
		t.Errorf("consume.succeeded of 20260930: %d distinct events after two runs, want 1", ids)
	}
}

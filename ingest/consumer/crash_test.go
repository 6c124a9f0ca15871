package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/store/schema"
)

type child struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

func startChild(t *testing.T, s *setup) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		childEnv+"=1",
		"HANDOFF_KAFKA_BROKERS="+s.brokers[0],
		"HANDOFF_TOPIC="+s.topic,
		"HANDOFF_DLQ_TOPIC="+s.dlq,
		"HANDOFF_GROUP="+s.group,
		"HANDOFF_TOPIC_PARTITIONS=4",
		"HANDOFF_CLICKHOUSE_ADDR="+s.chAddr,
		"HANDOFF_CLICKHOUSE_DATABASE="+s.db,
		"HANDOFF_BATCH_SIZE=500",
		"HANDOFF_FLUSH_INTERVAL=100ms",
		"HANDOFF_RETRY_MAX=1s",
		"HANDOFF_SESSION_TIMEOUT=6s",
	)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, out: out}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("ingester output:\n%s", out.String())
		}
	})
	return c
}

// TestCrash kills the ingester with SIGKILL while events are streaming
// in, restarts it, and checks that every event is stored exactly once (as
// seen through FINAL and distinct event ids) and all offsets committed.
func TestCrash(t *testing.T) {
	s := newSetup(t, "crash")
	const pipeline = "pipe.crash"
	events := testenv.Events(20000, pipeline, 99)
	msgs := twiceShuffled(events, 3)
	w := writer(t, s.brokers, s.topic)

	// Create topics and schema first: the producer must not race the
	// child's start-up.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := topics.Ensure(ctx, s.brokers, topics.Spec{Name: s.topic, Partitions: 4}, topics.Spec{Name: s.dlq, Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	if err := schema.Ensure(ctx, s.conn, s.db); err != nil {
		t.Fatal(err)
	}
	first := startChild(t, s)

	// Stream the messages in chunks while the ingester runs.
	var wg sync.WaitGroup
	var produceErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < len(msgs); i += 2000 {
			if err := w.WriteMessages(ctx, msgs[i:min(i+2000, len(msgs))]...); err != nil {
				produceErr = err
				return
			}
		}
	}()

	q := "SELECT count() FROM " + s.db + ".events FINAL"
	testenv.Eventually(t, 2*time.Minute, "some events stored before the crash", func() (bool, string) {
		n := count(t, s.conn, q)
		return n >= 2000, fmt.Sprintf("%d stored", n)
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()
	atCrash := count(t, s.conn, q)
	t.Logf("killed the ingester with %d of %d events stored", atCrash, len(events))

	second := startChild(t, s)
	wg.Wait()
	if produceErr != nil {
		t.Fatalf("produce: %v", produceErr)
	}
	waitCount(t, s.conn, 3*time.Minute, uint64(len(events)), q)
	if n := count(t, s.conn, "SELECT uniqExact(event_id) FROM "+s.db+".events"); n != uint64(len(events)) {
		t.Fatalf("distinct event ids = %d, want %d", n, len(events))
	}
	testenv.Eventually(t, time.Minute, "all offsets committed", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("ingester after SIGTERM: %v\n%s", err, second.out.String())
	}
	// Still exactly once after the graceful stop.
	if n := count(t, s.conn, q); n != uint64(len(events)) {
		t.Fatalf("count FINAL = %d after stop, want %d", n, len(events))
	}
	if atCrash >= uint64(len(events)) {
		t.Logf("note: all events were stored before the kill; the crash hit the commit path only")
	}
}

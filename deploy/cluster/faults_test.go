//go:build cluster

package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// load is how many events each fault test sends (HANDOFF_CLUSTER_LOAD,
// default 200,000: the cluster's nine servers and four handoff processes
// share this machine's two cores).
func load(t *testing.T) int {
	if v := os.Getenv("HANDOFF_CLUSTER_LOAD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("HANDOFF_CLUSTER_LOAD=%q: want a whole number of events, at least 1000", v)
		}
		return n
	}
	return 200_000
}

// node runs cluster.sh ACTION NODE (start, stop, kill) on the local cluster.
func (e env) node(t *testing.T, action, node string) {
	t.Helper()
	cmd := exec.Command("bash", e.script, action, node)
	cmd.Env = append(os.Environ(), "HANDOFF_DATA_DIR="+filepath.Dir(e.dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cluster.sh %s %s: %v\n%s", action, node, err, out)
	}
}

// emitting sends n events of a new pipeline in chunks from a goroutine and
// reports, on done, the first error and the longest single Send (the time
// a producer waited out a fault). Each chunk must be acknowledged by
// min.insync.replicas brokers (acks=all) within a minute.
type emitting struct {
	pipeline string
	n        int
	sent     chan int // events acknowledged so far, after each chunk
	done     chan error
	mu       sync.Mutex
	longest  time.Duration
}

func startEmitting(t *testing.T, e env, prefix string, n int) *emitting {
	em, err := emit.New(emit.Config{Brokers: e.brokers, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s := &emitting{pipeline: testenv.Name(prefix), n: n, sent: make(chan int, n/1000+1), done: make(chan error, 1)}
	go func() {
		defer em.Close()
		events := testenv.Events(n, s.pipeline, 11)
		for i := 0; i < n; i += 1000 {
			chunk := events[i:min(i+1000, n)]
			start := time.Now()
			if err := em.Send(context.Background(), chunk); err != nil {
				s.done <- fmt.Errorf("events %d..%d: %w", i, i+len(chunk), err)
				return
			}
			s.mu.Lock()
			s.longest = max(s.longest, time.Since(start))
			s.mu.Unlock()
			s.sent <- i + len(chunk)
		}
		s.done <- nil
	}()
	return s
}

// until waits until at least n events were acknowledged.
func (s *emitting) until(t *testing.T, n int) {
	t.Helper()
	for {
		select {
		case got := <-s.sent:
			if got >= n {
				return
			}
		case err := <-s.done:
			s.done <- err
			if err != nil {
				t.Fatalf("emitting stopped: %v", err)
			}
			return
		case <-time.After(2 * time.Minute):
			t.Fatalf("fewer than %d events acknowledged after 2 minutes", n)
		}
	}
}

// finish waits for the last event to be acknowledged and then for every
// event to be stored once in the cluster; it returns how long storing took
// after the last acknowledgement.
func (s *emitting) finish(t *testing.T, e env) time.Duration {
	t.Helper()
	go func() {
		for range s.sent {
		}
	}()
	if err := <-s.done; err != nil {
		t.Fatalf("emit during the fault: %v", err)
	}
	acked := time.Now()
	dist := open(t, e.servers[0])
	testenv.Eventually(t, 5*time.Minute, "every event stored in the cluster", func() (bool, string) {
		n := count(t, dist, "SELECT uniqExact(event_id) FROM "+e.db+".events WHERE pipeline = ?", s.pipeline)
		return n == uint64(s.n), fmt.Sprintf("%d of %d distinct events", n, s.n)
	})
	return time.Since(acked)
}

// leaderOf returns the node name (kafkaN) of the broker leading partition
// 0 of the events topic.
func leaderOf(t *testing.T, e env) string {
	t.Helper()
	c := &kafka.Client{Addr: kafka.TCP(e.brokers...), Transport: &kafka.Transport{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{emit.DefaultTopic}})
	if err != nil || len(meta.Topics) != 1 || len(meta.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata of %s: %v", emit.DefaultTopic, err)
	}
	return fmt.Sprintf("kafka%d", meta.Topics[0].Partitions[0].Leader.ID)
}

// TestEmitSurvivesLeaderChange: kill -9 the leader of an events partition
// while events are emitted (acks=all, min.insync.replicas 2 of 3), then
// bring it back. Every emit succeeds, and every event is stored once.
func TestEmitSurvivesLeaderChange(t *testing.T) {
	e := clusterEnv(t)
	n := load(t)
	s := startEmitting(t, e, "cluster-leader", n)
	s.until(t, n/5)
	victim := leaderOf(t, e)
	killed := time.Now()
	e.node(t, "kill", victim)
	t.Logf("kill -9 %s (leader of partition 0) after %d+ events", victim, n/5)
	s.until(t, n/2)
	e.node(t, "start", victim)
	t.Logf("%s back %s after the kill", victim, time.Since(killed).Round(time.Millisecond))
	store := s.finish(t, e)
	t.Logf("recovery: longest emit (1,000 events) %s; all %d events stored once %s after the last acknowledgement",
		s.longest.Round(time.Millisecond), n, store.Round(time.Millisecond))
}

// committed reads the ingesters' group's committed offset of every events
// partition.
func committed(ctx context.Context, c *kafka.Client) (map[int]int64, error) {
	parts := make([]int, 6)
	for i := range parts {
		parts[i] = i
	}
	resp, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: "handoff-ingest", Topics: map[string][]int{emit.DefaultTopic: parts}})
	if err != nil {
		return nil, err
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[emit.DefaultTopic] {
		out[p.Partition] = p.CommittedOffset
	}
	return out, nil
}

// TestRebalanceNeverMovesCommitsBack: kill -9 one of the two ingesters
// under load, then start it again (two rebalances of the group). The
// group's committed offsets, polled all along, never decrease, and every
// event is stored once.
func TestRebalanceNeverMovesCommitsBack(t *testing.T) {
	e := clusterEnv(t)
	n := load(t)
	c := &kafka.Client{Addr: kafka.TCP(e.brokers...), Transport: &kafka.Transport{}}
	stop := make(chan struct{})
	watched := make(chan error, 1)
	go func() {
		last := map[int]int64{}
		polls := 0
		for {
			select {
			case <-stop:
				if polls == 0 {
					watched <- fmt.Errorf("no poll of the committed offsets succeeded")
					return
				}
				watched <- nil
				return
			case <-time.After(100 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			now, err := committed(ctx, c)
			cancel()
			if err != nil {
				continue // the coordinator may be moving; the next poll sees it
			}
			polls++
			for p, off := range now {
				if off < last[p] {
					watched <- fmt.Errorf("partition %d: committed offset went back from %d to %d", p, last[p], off)
					return
				}
				last[p] = off
			}
		}
	}()
	s := startEmitting(t, e, "cluster-rebalance", n)
	s.until(t, n/5)
	e.node(t, "kill", "ingest1")
	killed := time.Now()
	s.until(t, n/2)
	e.node(t, "start", "ingest1")
	t.Logf("ingest1 killed (-9) and started again %s later", time.Since(killed).Round(time.Millisecond))
	store := s.finish(t, e)
	close(stop)
	if err := <-watched; err != nil {
		t.Error(err)
	}
	t.Logf("recovery: all %d events stored once %s after the last acknowledgement", n, store.Round(time.Millisecond))
}

//go:build cluster

package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/schema"
)

// findingsTopic is where the cluster's detectors publish.
const findingsTopic = "handoff.findings"

// load is how many events each fault test sends (HANDOFF_CLUSTER_LOAD,
// default 1,000,000).
func load(t *testing.T) int {
	if v := os.Getenv("HANDOFF_CLUSTER_LOAD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("HANDOFF_CLUSTER_LOAD=%q: want a whole number of events, at least 1000", v)
		}
		return n
	}
	return 1_000_000
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

// pipelines is the SQL condition selecting the pipelines of prefix (a
// primary-key range: PREFIX. up to PREFIX/).
func pipelines(prefix string) string {
	return "pipeline >= '" + prefix + ".' AND pipeline < '" + prefix + "/'"
}

// emitting sends events in chunks of 1,000 from a goroutine and reports,
// on done, the first error and the longest single Send (the time a
// producer waited out a fault). Each chunk must be acknowledged
// (acks=all, min.insync.replicas 2) within a minute.
type emitting struct {
	prefix   string
	events   []model.Event
	expected map[string]string // fingerprint -> kind/name one detector leaves open
	now      time.Time
	from     map[int]int64 // end offsets of the findings topic at the start
	sent     chan int      // events acknowledged so far, after each chunk
	done     chan error
	mu       sync.Mutex
	longest  time.Duration
}

func startEmitting(t *testing.T, e env, prefix string, n int) *emitting {
	em, err := emit.New(emit.Config{Brokers: e.brokers, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s := &emitting{prefix: testenv.Name(prefix), now: time.Now(), sent: make(chan int, n/1000+1), done: make(chan error, 1)}
	s.events = testenv.RecentEvents(n, s.prefix, 10000, s.now)
	// What one detector leaves open, worked out before the first event is
	// sent: after the last acknowledgement it took this process minutes
	// of the same two cores, and the time to settle included them.
	s.expected = expectedOpen(t, s.events, s.now)
	s.from = testenv.EndOffsets(t, e.brokers, findingsTopic)
	events := slices.Clone(s.events)
	go func() {
		defer em.Close()
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

// finish waits for the last event to be acknowledged, then for every event
// to be stored once in the cluster, then for the detectors' findings to
// settle on what one detector given every event at once raises; it logs
// how long each took after the last acknowledgement.
func (s *emitting) finish(t *testing.T, e env) {
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
	want := uint64(len(s.events))
	testenv.Eventually(t, 10*time.Minute, "every event stored in the cluster", func() (bool, string) {
		n := count(t, dist, "SELECT uniqExact(event_id) FROM "+e.db+".events WHERE "+pipelines(s.prefix))
		return n == want, fmt.Sprintf("%d of %d distinct events", n, want)
	})
	t.Logf("recovery: all %d events stored once (uniqExact(event_id) through the Distributed table) %s after the last acknowledgement; longest emit of 1,000 events %s",
		want, time.Since(acked).Round(time.Millisecond), s.longest.Round(time.Millisecond))

	expected := s.expected
	// The bound is generous on purpose: a million events here raise about
	// 500,000 finding records (a quarter of the generated batches are
	// anomalous, far more than in life, and their events trickle in after
	// every deadline), each encoded, replicated three times and stored
	// twice, on two cores shared by twelve servers; settling has taken 40 s
	// to 10 minutes. The test is about losing or doubling nothing, not
	// about speed: the time is logged.
	// Where the time goes: a line every half minute with what the read
	// saw and how long the read itself took. A read through the
	// Distributed table asks any replica of each shard, which may not have
	// fetched its peer's parts yet; so the time at which every replica's
	// rows together (what handoff stored) equal the expected set is logged
	// too: the difference is replication.
	logged := acked
	var stored time.Duration
	everyReplica := "remote('" + strings.Join(e.servers, ",") + "', " + e.db + "." + schema.Findings + schema.LocalSuffix + ")"
	testenv.Eventually(t, 30*time.Minute, "the stored open findings equal one detector's", func() (bool, string) {
		t0 := time.Now()
		got := storedOpen(t, dist, e.db+"."+schema.Findings, s.prefix)
		missing, extra := diff(expected, got), diff(got, expected)
		msg := fmt.Sprintf("%d open findings stored, %d expected: %d missing (e.g. %v), %d not expected (e.g. %v)",
			len(got), len(expected), len(missing), first(missing), len(extra), first(extra))
		read := time.Since(t0)
		if stored == 0 {
			// A server that is down fails the read: try again next time.
			if all, err := readOpen(dist, everyReplica, s.prefix); err == nil && len(diff(expected, all)) == 0 && len(diff(all, expected)) == 0 {
				stored = time.Since(acked)
				t.Logf("%s after the last acknowledgement: the rows of every replica together equal one detector's", stored.Round(time.Second))
			}
		}
		if time.Since(logged) >= 30*time.Second {
			logged = time.Now()
			t.Logf("%s after the last acknowledgement, through the Distributed table: %s (read in %s)", time.Since(acked).Round(time.Second), msg, read.Round(time.Millisecond))
		}
		return len(missing) == 0 && len(extra) == 0, msg
	})
	settled := time.Since(acked)
	conflicting, repeated := doubled(t, e, s.from, s.prefix)
	if len(conflicting) > 0 {
		t.Errorf("%d (fingerprint, seq) published twice with different records on %s (a finding raised twice), e.g. %v",
			len(conflicting), findingsTopic, first(conflicting))
	}
	t.Logf("recovery: %d open findings equal to one detector's, %s after the last acknowledgement; no finding raised twice; %d records written again unchanged (e.g. %v)",
		len(expected), settled.Round(time.Millisecond), len(repeated), first(repeated))
}

// expectedOpen is what one detector that observes every event and then
// advances to now leaves open: fingerprint -> kind/name.
func expectedOpen(t *testing.T, events []model.Event, now time.Time) map[string]string {
	t.Helper()
	set, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		d.Observe(&events[i])
	}
	latest := map[string]detect.Finding{}
	for _, f := range d.Advance(now, now) {
		latest[f.Fingerprint] = f
	}
	out := map[string]string{}
	for fp, f := range latest {
		if f.State == detect.Open {
			out[fp] = string(f.Kind) + "/" + f.Name
		}
	}
	if len(out) == 0 {
		t.Fatal("the events raise no finding at all: the check would prove nothing")
	}
	return out
}

// storedOpen reads the open findings of prefix's pipelines from table
// (findings_v2, or a remote() of its local tables): the latest record per
// fingerprint, never FINAL.
func storedOpen(t *testing.T, conn driver.Conn, table, prefix string) map[string]string {
	t.Helper()
	out, err := readOpen(conn, table, prefix)
	if err != nil {
		t.Fatalf("read the findings: %v", err)
	}
	return out
}

// readOpen is storedOpen's read, its error returned.
func readOpen(conn driver.Conn, table, prefix string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT fingerprint, argMax(kind, seq), argMax(name, seq) FROM "+table+" WHERE "+
		pipelines(prefix)+" GROUP BY fingerprint HAVING argMax(state, seq) = 'open'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var fp, kind, name string
		if err := rows.Scan(&fp, &kind, &name); err != nil {
			return nil, err
		}
		out[fp] = kind + "/" + name
	}
	return out, rows.Err()
}

// diff returns the entries of a that b lacks or has differently.
func diff(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k+" "+v)
		}
	}
	slices.Sort(out)
	return out
}

func first(s []string) []string { return s[:min(len(s), 3)] }

// doubled reads the findings topic from the offsets of from to its end and
// returns the (fingerprint, seq) of prefix's pipelines published more than
// once: conflicting (different records under one (fingerprint, seq): the
// same condition raised twice, which must never happen) and repeated
// (the same record again: a write whose acknowledgement was lost, sent
// again; consumers keep one, as they keep one of a redelivery).
func doubled(t *testing.T, e env, from map[int]int64, prefix string) (conflicting, repeated []string) {
	t.Helper()
	end := testenv.EndOffsets(t, e.brokers, findingsTopic)
	seen := map[string][]string{}
	for p, off := range from {
		if off >= end[p] {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Topic: findingsTopic, Partition: p, MaxBytes: 16 << 20})
		if err := r.SetOffset(off); err != nil {
			t.Fatal(err)
		}
		for off < end[p] {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			m, err := r.ReadMessage(ctx)
			cancel()
			if err != nil {
				r.Close()
				t.Fatalf("read %s/%d at %d: %v", findingsTopic, p, off, err)
			}
			off = m.Offset + 1
			f, err := detect.ParseFinding(m.Value)
			if err != nil {
				t.Errorf("finding at %s/%d@%d: %v", findingsTopic, p, m.Offset, err)
				continue
			}
			if f.Batch.Pipeline > prefix+"." && f.Batch.Pipeline < prefix+"/" {
				k := fmt.Sprintf("%s/%d", f.Fingerprint, f.Seq)
				seen[k] = append(seen[k], string(m.Value))
			}
		}
		r.Close()
	}
	for k, recs := range seen {
		if len(recs) < 2 {
			continue
		}
		slices.Sort(recs)
		if recs[0] != recs[len(recs)-1] {
			conflicting = append(conflicting, fmt.Sprintf("%s: %q and %q", k, recs[0], recs[len(recs)-1]))
		} else {
			repeated = append(repeated, fmt.Sprintf("%s x%d", k, len(recs)))
		}
	}
	slices.Sort(conflicting)
	slices.Sort(repeated)
	return conflicting, repeated
}

// leaderOf returns the node name (kafkaN) of the broker leading partition
// 0 of the events topic.
func leaderOf(t *testing.T, e env) string {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(e.brokers...), Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{emit.DefaultTopic}})
	if err != nil || len(meta.Topics) != 1 || len(meta.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata of %s: %v", emit.DefaultTopic, err)
	}
	return fmt.Sprintf("kafka%d", meta.Topics[0].Partitions[0].Leader.ID)
}

// fault kills node (kill -9 with "kill", SIGTERM with "stop") a fifth of
// the way through the load, starts it again half way, and logs how long it
// was down.
func fault(t *testing.T, e env, s *emitting, action string, nodes ...string) {
	t.Helper()
	n := len(s.events)
	s.until(t, n/5)
	down := time.Now()
	for _, node := range nodes {
		e.node(t, action, node)
	}
	t.Logf("%s %v after %d+ events", action, nodes, n/5)
	s.until(t, n/2)
	for _, node := range nodes {
		e.node(t, "start", node)
	}
	t.Logf("%v back %s after the %s", nodes, time.Since(down).Round(time.Millisecond), action)
}

// TestKafkaBrokerKill (kill -9 the leader of an events partition, then
// bring it back): every emit succeeds (acks=all waits out the leader
// change), every event is stored once, the findings equal one detector's.
func TestKafkaBrokerKill(t *testing.T) {
	e := clusterEnv(t)
	s := startEmitting(t, e, "cluster-kafka", load(t))
	s.until(t, 1)
	fault(t, e, s, "kill", leaderOf(t, e))
	s.finish(t, e)
}

// TestClickHouseReplicaKill (kill -9 ch1, the first server of ingest1 and
// detect1, then bring it back): inserts move to the other servers,
// nothing is lost or stored twice, the findings equal one detector's, and
// ch1 catches up with its replica ch2.
func TestClickHouseReplicaKill(t *testing.T) {
	e := clusterEnv(t)
	s := startEmitting(t, e, "cluster-ch", load(t))
	fault(t, e, s, "kill", "ch1")
	back := time.Now()
	s.finish(t, e)
	a, b := open(t, e.servers[0]), open(t, e.servers[1])
	q := "SELECT uniqExact(event_id) FROM " + e.db + ".events_local WHERE " + pipelines(s.prefix)
	testenv.Eventually(t, 5*time.Minute, "ch1 caught up with ch2", func() (bool, string) {
		na, nb := count(t, a, q), count(t, b, q)
		return na == nb && na > 0, fmt.Sprintf("ch1 %d, ch2 %d events", na, nb)
	})
	t.Logf("recovery: ch1 holds what ch2 holds %s after it was started again", time.Since(back).Round(time.Millisecond))
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

// TestIngesterAndDetectorKill (kill -9 ingest1 and detect1 under load, then
// start them again: two rebalances of each group): the ingest group's
// committed offsets, polled all along, never decrease; every event is
// stored once; the findings equal one detector's, none published twice.
func TestIngesterAndDetectorKill(t *testing.T) {
	e := clusterEnv(t)
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(e.brokers...), Transport: tr}
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
	s := startEmitting(t, e, "cluster-procs", load(t))
	fault(t, e, s, "kill", "ingest1", "detect1")
	s.finish(t, e)
	close(stop)
	if err := <-watched; err != nil {
		t.Error(err)
	}
}

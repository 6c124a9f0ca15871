package consumer_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// TestEndToEnd: thousands of events over many batches, every event sent
// twice and shuffled, plus malformed messages. Afterwards exactly the valid
// events are stored, once each, equal to what was sent; every malformed
// message is dead-lettered (table and topic) with its reason; offsets are
// committed.
func TestEndToEnd(t *testing.T) {
	s := newSetup(t, "e2e")
	const pipeline = "pipe.e2e"
	events := testenv.Events(6000, pipeline, 42)
	_, reg, stop := start(t, s.config(), consumer.Options{})

	w := writer(t, s.brokers, s.topic)
	bad, want := malformed(pipeline)
	msgs := twiceShuffled(events, 7)
	// Interleave the malformed messages.
	step := len(msgs) / (len(bad) + 1)
	var all []kafka.Message
	for i, m := range msgs {
		all = append(all, m)
		if i%step == step-1 && len(bad) > 0 {
			all = append(all, bad[0])
			bad = bad[1:]
		}
	}
	all = append(all, bad...)
	produce(t, w, all)

	waitCount(t, s.conn, 2*time.Minute, uint64(len(events)), "SELECT count() FROM "+s.db+".events FINAL")
	waitCount(t, s.conn, time.Minute, uint64(len(want)), "SELECT count() FROM "+s.db+".dead_letters FINAL")
	if n := count(t, s.conn, "SELECT uniqExact(event_id) FROM "+s.db+".events"); n != uint64(len(events)) {
		t.Fatalf("distinct event ids stored = %d, want %d", n, len(events))
	}

	// Dead letters: each malformed message with its reason and source.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := s.conn.Query(ctx, "SELECT key, reason, error, topic, kafka_offset, length(payload) FROM "+s.db+".dead_letters FINAL")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var key, reason, errText, topic string
		var off int64
		var plen uint64
		if err := rows.Scan(&key, &reason, &errText, &topic, &off, &plen); err != nil {
			t.Fatal(err)
		}
		got[key] = reason
		if topic != s.topic || errText == "" {
			t.Errorf("dead letter %s: topic %q, error %q", key, topic, errText)
		}
		if key == "oversized" && plen <= model.MaxEventSize {
			t.Errorf("oversized payload stored with %d bytes, want the original > 1 MiB", plen)
		}
	}
	rows.Close()
	for key, kind := range want {
		if got[key] != string(kind) {
			t.Errorf("dead letter %s: reason %q, want %q", key, got[key], kind)
		}
	}

	// Read back through store/history: equal to the sent events, as a set.
	st, err := history.New(s.conn, s.db)
	if err != nil {
		t.Fatal(err)
	}
	back, err := st.Events(ctx, history.Filter{Pipeline: pipeline, Heartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]model.Event{}
	for _, e := range events {
		byID[e.ID] = e
	}
	if len(back) != len(events) {
		t.Fatalf("store read %d events, want %d", len(back), len(events))
	}
	for _, e := range back {
		if !reflect.DeepEqual(e, byID[e.ID]) {
			t.Fatalf("event %s read back differs:\n got %#v\nwant %#v", e.ID, e, byID[e.ID])
		}
	}

	// Offsets committed up to the end.
	testenv.Eventually(t, 30*time.Second, "all offsets committed", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})

	// DLQ topic: the malformed messages with headers.
	dlqSeen := map[string]map[string]string{}
	for _, m := range readAll(t, s.brokers, s.dlq) {
		h := map[string]string{}
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		dlqSeen[string(m.Key)] = h
	}
	for key, kind := range want {
		h, ok := dlqSeen[key]
		if !ok {
			t.Errorf("dead letter %s not on topic %s", key, s.dlq)
			continue
		}
		if h[deadletter.HeaderReason] != string(kind) || h[deadletter.HeaderSourceTopic] != s.topic || h[deadletter.HeaderSourceOffset] == "" || h[deadletter.HeaderError] == "" {
			t.Errorf("dead letter %s headers: %v", key, h)
		}
	}

	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	total := float64(len(all))
	if v := metricValue(t, reg, "handoff_ingest_consumed_total"); v < total {
		t.Errorf("consumed_total = %v, want >= %v", v, total)
	}
	if v := metricValue(t, reg, "handoff_ingest_rejected_total"); v < float64(len(want)) {
		t.Errorf("rejected_total = %v, want >= %d", v, len(want))
	}
	if v := metricValue(t, reg, "handoff_ingest_rejected_total", "reason", "too_large"); v < 1 {
		t.Errorf("rejected_total{reason=too_large} = %v", v)
	}
	if v := metricValue(t, reg, "handoff_ingest_inserted_total"); v < float64(2*len(events)) {
		t.Errorf("inserted_total = %v, want >= %d", v, 2*len(events))
	}
}

package emit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
)

var fixed = time.Date(2026, 10, 1, 1, 2, 3, 456789000, time.UTC)

func TestFill(t *testing.T) {
	var e model.Event
	emit.Fill(&e, fixed)
	if e.ID == "" || len(e.ID) != 36 {
		t.Errorf("event id %q, want a UUID", e.ID)
	}
	if !e.Time.Equal(fixed.Truncate(time.Millisecond)) || e.Time.Location() != time.UTC {
		t.Errorf("time %v", e.Time)
	}
	if e.Spec != model.SpecV1 {
		t.Errorf("spec %q", e.Spec)
	}
	// Present values are kept.
	e2 := model.Event{ID: "mine", Time: fixed.Add(time.Hour)}
	emit.Fill(&e2, fixed)
	if e2.ID != "mine" || !e2.Time.Equal(fixed.Add(time.Hour).Truncate(time.Millisecond)) {
		t.Errorf("filled over given values: %+v", e2)
	}
}

func TestPrepareNamesBadEvent(t *testing.T) {
	em, err := emit.New(emit.Config{Brokers: []string{"127.0.0.1:1"}, Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	evs := []model.Event{
		{Type: model.JobSucceeded, Pipeline: "p", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930", System: model.Producer},
		{Type: model.ArtifactFinalized, Pipeline: "p", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930", System: model.Producer, Object: "f.csv"},
	}
	err = em.Prepare(evs)
	var ve *model.ValidationError
	if !errors.As(err, &ve) || ve.Field != "rows" || !strings.Contains(err.Error(), "event 2") {
		t.Fatalf("got %v, want event 2 missing rows", err)
	}
	// Emit does not send when any event is invalid, and fails fast.
	if err := em.Emit(context.Background(), evs...); err == nil {
		t.Fatal("emit of an invalid event succeeded")
	}
	if evs[0].ID == "" {
		t.Error("Prepare did not fill in place")
	}
}

func TestEmitLinesBadLines(t *testing.T) {
	em, err := emit.New(emit.Config{Brokers: []string{"127.0.0.1:1"}, Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		`{"type":"job.succeeded","pipeline":"p","business_date":"2026-09-30","batch_id":"20260930","system":"producer"}`,
		``,
		`{"type":"job.succeeded","pipeline":"p","business_date":"2026-13-30","batch_id":"20260930","system":"producer"}`,
		`not json`,
	}, "\n")
	n, err := em.EmitLines(context.Background(), strings.NewReader(in), nil)
	if n != 0 || err == nil {
		t.Fatalf("sent %d, err %v; want nothing sent and an error", n, err)
	}
	for _, want := range []string{"line 3: business_date", "line 4: not valid JSON", "2 bad line(s)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	var le *emit.LineError
	if !errors.As(err, &le) || le.Line != 3 {
		t.Errorf("first LineError %+v", le)
	}
}

func TestEmitToKafka(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topic := tempTopic(t, brokers, "test_emit")
	em, err := emit.New(emit.Config{Brokers: brokers, Topic: topic, CreateTopic: true, Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	evs := testenv.Events(50, "pipe.emit", 3)
	for i := range evs {
		if i%2 == 0 {
			evs[i].ID = "" // filled by the emitter
		}
	}
	if err := em.Emit(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	lines := `{"type":"job.succeeded","pipeline":"pipe.emit","business_date":"2026-09-30","batch_id":"20260930","system":"producer"}` + "\n"
	n, err := em.EmitLines(ctx, strings.NewReader(lines), nil)
	if err != nil || n != 1 {
		t.Fatalf("EmitLines: %d, %v", n, err)
	}

	got := 0
	var dec model.Decoder
	for p := 0; p < 3; p++ {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p, MaxWait: 2 * time.Second})
		conn, err := kafka.DialLeader(ctx, "tcp", brokers[0], topic, p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < last; off++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			e, err := dec.Decode(m.Value)
			if err != nil {
				t.Fatalf("emitted message does not decode: %v: %s", err, m.Value)
			}
			if string(m.Key) != e.PartitionKey() {
				t.Errorf("key %q, want %q", m.Key, e.PartitionKey())
			}
			got++
		}
		r.Close()
	}
	if got != len(evs)+1 {
		t.Fatalf("read %d events back, want %d", got, len(evs)+1)
	}
	if c := testenv.Codecs(t, brokers, topic); c["lz4"] != got || len(c) != 1 {
		t.Fatalf("compression of the %d emitted events: %v, want all lz4", got, c)
	}
}

func TestEmitTimeout(t *testing.T) {
	// Nothing listens on this port: Emit must fail within the timeout,
	// saying Kafka did not acknowledge.
	em, err := emit.New(emit.Config{Brokers: []string{"127.0.0.1:1"}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	start := time.Now()
	err = em.Emit(context.Background(), model.Event{Type: model.JobSucceeded, Pipeline: "p", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "1", System: model.Producer})
	if err == nil {
		t.Fatal("emit to a dead broker succeeded")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
	t.Log(err)
}

// TestEmitRecoversAfterBrokerBlip: a broker that is unreachable at the
// first Emit (topic creation fails) does not make the emitter fail for
// ever; the next Emit, once the broker is reachable, creates the topic and
// sends.
func TestEmitRecoversAfterBrokerBlip(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topic := tempTopic(t, brokers, "test_emit_blip")
	p := testenv.NewProxy(t, brokers[0])
	p.SetDown(true)
	em, err := emit.New(emit.Config{Brokers: []string{p.Addr()}, Topic: topic, CreateTopic: true, Partitions: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	ev := model.Event{Type: model.JobSucceeded, Pipeline: "pipe.blip", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930", System: model.Producer}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := em.Emit(ctx, ev); err == nil {
		t.Fatal("emit through a cut proxy succeeded")
	}
	p.SetDown(false)
	if err := em.Emit(ctx, ev); err != nil {
		t.Fatalf("emit after the broker came back: %v", err)
	}
	conn, err := kafka.DialLeader(ctx, "tcp", brokers[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if last, err := conn.ReadLastOffset(); err != nil || last != 1 {
		t.Fatalf("topic %s holds %d messages (%v), want the 1 emitted", topic, last, err)
	}
}

// TestEmitManyLargeEvents: events near the 1 MiB limit, a dozen in one
// Emit, all reach the topic the emitter created: the writer must not put
// more into one request than the topic's max.message.bytes.
func TestEmitManyLargeEvents(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topic := tempTopic(t, brokers, "test_emit_large")
	em, err := emit.New(emit.Config{Brokers: brokers, Topic: topic, CreateTopic: true, Partitions: 1, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	evs := make([]model.Event, 12)
	for i := range evs {
		// attrs are capped (model.MaxAttrsBytes); a long error message is not.
		evs[i] = model.Event{Type: model.JobFailed, Pipeline: "pipe.large", BusinessDate: model.MustParseDate("2026-09-30"),
			BatchID: "20260930", System: model.Producer, Error: strings.Repeat("x", model.MaxEventSize-4096)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := em.Emit(ctx, evs...); err != nil {
		t.Fatalf("emit of %d large events: %.300v", len(evs), err)
	}
	conn, err := kafka.DialLeader(ctx, "tcp", brokers[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if last, err := conn.ReadLastOffset(); err != nil || last != int64(len(evs)) {
		t.Fatalf("topic %s holds %d messages (%v), want %d", topic, last, err, len(evs))
	}
}

// tempTopic returns a unique topic name and deletes the topic at cleanup.
func tempTopic(t *testing.T, brokers []string, prefix string) string {
	topic := testenv.Topic(t, brokers, prefix)
	return topic
}

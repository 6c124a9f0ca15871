package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
)

// olContract is the seed's contract with the producer's Airflow task
// claimed through OpenLineage.
const olContract = storyContract + `openlineage:
  namespace: airflow
  job: "build.account-balance-snapshot.daily"
  business_date: nominal_start
`

// olSamples returns the OpenLineage samples of model/openlineage, one
// compact JSON object per line: a failed run, its retry (a new run id)
// that completes with output statistics, a Spark event without eventType,
// a RUNNING update.
func olSamples(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"start.json", "fail.json", "retry-start.json", "running.json", "retry-complete.json", "no-eventtype.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "model", "openlineage", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			t.Fatal(err)
		}
		out = append(out, c.String())
	}
	return out
}

// TestOpenLineageFileToDiagnosis maps a file of run events and diagnoses
// the result: the job's SUCCESS and the final file are proven, the
// transfer is not.
func TestOpenLineageFileToDiagnosis(t *testing.T) {
	clearEnv(t)
	t.Setenv("HANDOFF_KAFKA_BROKERS", "")
	dir := t.TempDir()
	contractFile := filepath.Join(dir, "abs.yaml")
	os.WriteFile(contractFile, []byte(olContract), 0o644)
	lines := append(olSamples(t), `{"eventType":"COMPLETE","run":{"runId":"r"},"job":{"namespace":"airflow","name":"build.account-balance-snapshot.daily"}}`,
		`{"eventType":"COMPLETE","eventTime":"2026-10-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"airflow","name":"some.other.job"}}`)
	in := filepath.Join(dir, "ol.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"openlineage", "--file", in, "--contract", contractFile, "--print"}, strings.NewReader(""), &out, &errb)
	if code != exitNotDelivered || !strings.Contains(errb.String(), "ol.jsonl:7: openlineage: eventTime: missing") ||
		!strings.Contains(errb.String(), "8 run events read, 6 handoff events mapped, 1 rejected, 1 of jobs no contract claims") {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var types []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		e, err := model.Decode([]byte(l))
		if err != nil {
			t.Fatalf("mapped line %q: %v", l, err)
		}
		if e.Key().String() != storyBatch {
			t.Fatalf("mapped to batch %s", e.Key())
		}
		types = append(types, string(e.Type))
	}
	want := []string{"job.started", "job.failed", "job.started", "job.succeeded", "artifact.finalized", "artifact.finalized"}
	if !slices.Equal(types, want) {
		t.Fatalf("mapped %v, want %v", types, want)
	}

	events := filepath.Join(dir, "events.jsonl")
	os.WriteFile(events, out.Bytes(), 0o644)
	code, dout, derr := runCmd(t, "", "--events", events, "--contract", contractFile, "--batch", storyBatch, "--format", "json", "--as-of", "2026-10-03T00:00:00Z")
	ds := decodeDiags(t, dout)
	if code != exitNotDelivered || len(ds) != 1 || ds[0].Verdict != "not_transferred" || ds[0].FirstMissing != "signaled" {
		t.Fatalf("diagnosis: exit %d, %+v, %s", code, ds, derr)
	}
}

// TestOpenLineageThroughKafka: run events on an OpenLineage topic go
// through the bridge to the events topic, through the ingester into
// ClickHouse, and into a diagnosis; an invalid one goes to the dead-letter
// topic with its reason.
func TestOpenLineageThroughKafka(t *testing.T) {
	svc := startServices(t, "handoff_ol")
	ctx, brokers, chAddr, db, topic := svc.ctx, svc.brokers, svc.chAddr, svc.db, svc.topic
	olTopic := testenv.Topic(t, brokers, "openlineage")
	contractFile := filepath.Join(t.TempDir(), "abs.yaml")
	os.WriteFile(contractFile, []byte(olContract), 0o644)
	background, b := svc.background, strings.Join(brokers, ",")
	background("openlineage", "openlineage", "--kafka-brokers", b, "--openlineage-topic", olTopic, "--group", olTopic,
		"--topic", topic, "--dlq-topic", topic+".dlq", "--contract", contractFile)

	// OpenLineage's Kafka transport: one run event per message, keyed by
	// the job.
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: olTopic, RequiredAcks: kafka.RequireAll, AllowAutoTopicCreation: true}
	defer w.Close()
	var msgs []kafka.Message
	for _, s := range append(olSamples(t), `{"eventType":"PAUSED","eventTime":"2026-10-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"airflow","name":"build.account-balance-snapshot.daily"}}`) {
		msgs = append(msgs, kafka.Message{Key: []byte("airflow/build.account-balance-snapshot.daily"), Value: []byte(s)})
	}
	testenv.Eventually(t, time.Minute, "run events written", func() (bool, string) {
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		err := w.WriteMessages(wctx, msgs...)
		return err == nil, ""
	})

	d := waitTimeline(t, chAddr, db, contractFile, "the mapped events", model.JobStarted, model.JobFailed, model.JobSucceeded, model.ArtifactFinalized)
	if d.Verdict != "not_transferred" {
		t.Fatalf("verdict %s, want not_transferred", d.Verdict)
	}
	n := 0
	for _, e := range d.Timeline {
		if e.Type == string(model.ArtifactFinalized) {
			n++
			if e.Rows != 120345 {
				t.Fatalf("artifact.finalized rows %d", e.Rows)
			}
		}
	}
	if len(d.Timeline) != 6 || n != 2 {
		t.Fatalf("timeline of %d events (%d finalized), want 6 (2)", len(d.Timeline), n)
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: testenv.Name("dlqcheck"), Topic: topic + ".dlq", StartOffset: kafka.FirstOffset, MaxWait: 500 * time.Millisecond})
	defer r.Close()
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	m, err := r.ReadMessage(rctx)
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	hdr := map[string]string{}
	for _, h := range m.Headers {
		hdr[h.Key] = string(h.Value)
	}
	if !strings.Contains(string(m.Value), "PAUSED") || hdr[deadletter.HeaderReason] != "bad_value" || !strings.Contains(hdr[deadletter.HeaderError], "eventType") || hdr[deadletter.HeaderSourceTopic] != olTopic {
		t.Fatalf("dead letter %s, headers %v", m.Value, hdr)
	}
}

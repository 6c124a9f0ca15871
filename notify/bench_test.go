package notify

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// BenchmarkWebhookBacklog measures how fast notify drains a backlog of
// findings (b.N records of distinct batches, already in the topic) to a
// local webhook that accepts at once: one record at a time, delivered,
// then its offset committed. Real Kafka:
//
//	go test -run '^$' -bench WebhookBacklog -benchtime 2000x -count 1 ./notify/
func BenchmarkWebhookBacklog(b *testing.B) {
	cfg := testConfig(b)
	hook := &recorder{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	cfg.WebhookURLs = []string{srv.URL}
	seed := seedFinding(b)
	records := make([][]byte, b.N)
	for i := range records {
		f := seed
		f.Batch.BatchID = fmt.Sprintf("bench%07d", i)
		f.Fingerprint = detect.Fingerprint(f.Batch, f.Kind, f.Name)
		f.Diagnosis.Batch = f.Batch.String()
		records[i] = f.AppendJSON(nil)
	}
	r := start(b, cfg)
	publish(b, cfg.Kafka.Brokers, cfg.FindingsTopic, records...)
	b.ResetTimer()
	began := time.Now()
	testenv.Eventually(b, 10*time.Minute, "the backlog delivered", func() (bool, string) {
		n := len(hook.accepted())
		return n >= b.N, fmt.Sprintf("%d of %d delivered", n, b.N)
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "findings/s")
	r.stop(b)
}

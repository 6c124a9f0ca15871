package notify

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// TestWebhookRedirectNotDelivered: a receiver answering with a redirect
// has not taken the finding. Following a 302 would re-send it as a GET
// without the body, which the target answers 200 ("delivered", committed,
// lost); following a 307 would post the body and its signature to another
// host. Each redirect is a refusal: the target gets nothing, the record is
// dead-lettered naming the redirect, and the log says so in one line, with
// no "finding delivered" for the same fingerprint.
func TestWebhookRedirectNotDelivered(t *testing.T) {
	target := &recorder{}
	targetSrv := httptest.NewServer(target)
	defer targetSrv.Close()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, targetSrv.URL+"/elsewhere", status)
			}))
			defer redirector.Close()
			cfg := testConfig(t)
			cfg.WebhookURLs = []string{redirector.URL}
			var logs logLines
			s := seedStory(t, testenv.Name("redirect"))
			r := startWith(t, cfg, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, s.records[0])

			reader := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Kafka.Brokers, GroupID: testenv.Name("dlq_reader"), Topic: cfg.DLQTopic, StartOffset: kafka.FirstOffset, MaxWait: 500 * time.Millisecond})
			defer reader.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			m, err := reader.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("no dead letter for a receiver answering %d: %v", status, err)
			}
			var reason string
			for _, h := range m.Headers {
				if h.Key == deadletter.HeaderError {
					reason = string(h.Value)
				}
			}
			if !strings.Contains(reason, fmt.Sprint(status)) || !strings.Contains(reason, "redirect") || !strings.Contains(reason, "/elsewhere") {
				t.Errorf("dead-letter reason %q: want the status, that it is a redirect, and where to", reason)
			}
			testenv.Eventually(t, 20*time.Second, "the dead-lettered record committed", func() (bool, string) {
				n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic)
				return n == 0, fmt.Sprintf("%d uncommitted", n)
			})
			r.stop(t)
			if target.count() != 0 {
				t.Errorf("the redirect target got %d requests; a redirect must not be followed", target.count())
			}
			lines := logs.about(t, s.open.Fingerprint)
			if len(lines) != 1 || lines[0]["level"] != "ERROR" || !strings.Contains(fmt.Sprint(lines[0]["msg"]), "not delivered") {
				t.Errorf("log lines about %s: %v; want one ERROR line saying it was not delivered", s.open.Fingerprint, lines)
			}
		})
	}
}

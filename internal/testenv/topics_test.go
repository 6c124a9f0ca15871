package testenv

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestTopicsDeletedAtCleanup: the topics named after a test's unique
// topic are gone once the test ends; a topic of another name is not
// touched.
func TestTopicsDeletedAtCleanup(t *testing.T) {
	brokers := KafkaBrokers(t)
	t.Setenv("HANDOFF_TEST_KEEP", "")
	other := Name("testenv_other")
	Topics(t, brokers, other) // the test's own cleanup, after the check
	var name string
	t.Run("user", func(t *testing.T) {
		name = Topic(t, brokers, "testenv_topic")
		create(t, brokers, name, name+".dlq", other)
		if got := existing(t, brokers, name, name+".dlq", other); len(got) != 3 {
			t.Fatalf("created 3 topics, the broker lists %v", got)
		}
	})
	Eventually(t, 30*time.Second, "the user test's topics deleted", func() (bool, string) {
		got := existing(t, brokers, name, name+".dlq", other)
		return len(got) == 1 && got[0] == other, "the broker lists " + strings.Join(got, " ")
	})
}

func create(t *testing.T, brokers []string, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, done := client(brokers)
	defer done()
	req := &kafka.CreateTopicsRequest{}
	for _, n := range names {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: n, NumPartitions: 1, ReplicationFactor: 1})
	}
	resp, err := c.CreateTopics(ctx, req)
	if err != nil {
		t.Fatalf("create topics %v: %v", names, err)
	}
	for n, err := range resp.Errors {
		if err != nil {
			t.Fatalf("create topic %s: %v", n, err)
		}
	}
}

// existing returns which of names the broker lists, in the order given.
func existing(t *testing.T, brokers []string, names ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, done := client(brokers)
	defer done()
	all, err := topicsWith(ctx, c, "")
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	var out []string
	for _, n := range names {
		if slices.Contains(all, n) {
			out = append(out, n)
		}
	}
	return out
}

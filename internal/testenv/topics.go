package testenv

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// Topic returns a unique topic name (Name(prefix)) and deletes, at
// cleanup, that topic and every topic named after it (its .dlq, ...), as
// Topics does.
func Topic(t testing.TB, brokers []string, prefix string) string {
	t.Helper()
	name := Name(prefix)
	Topics(t, brokers, name)
	return name
}

// Topics deletes at cleanup every topic whose name starts with prefix,
// unless HANDOFF_TEST_KEEP is set: the topics a test made on the shared
// broker, so that repeated runs do not pile them up. prefix must hold a
// unique name (Name, Database) so that no other test's topic matches. It
// is best effort: a broker that refuses or is gone is logged, never fails
// the test.
func Topics(t testing.TB, brokers []string, prefix string) {
	t.Helper()
	if prefix == "" {
		t.Fatal("testenv.Topics: empty prefix would match every topic of the broker")
	}
	t.Cleanup(func() {
		if os.Getenv("HANDOFF_TEST_KEEP") != "" {
			t.Logf("keeping Kafka topics %s* (HANDOFF_TEST_KEEP)", prefix)
			return
		}
		if err := deleteTopics(brokers, prefix); err != nil {
			t.Logf("delete test topics %s*: %v", prefix, err)
		}
	})
}

// topicsWith returns the names of the topics of brokers that start with
// prefix ("": all), sorted.
func topicsWith(ctx context.Context, c *kafka.Client, prefix string) ([]string, error) {
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tp := range meta.Topics {
		if strings.HasPrefix(tp.Name, prefix) {
			names = append(names, tp.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// deleteTopics deletes the topics of brokers whose names start with
// prefix.
func deleteTopics(brokers []string, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, done := client(brokers)
	defer done()
	names, err := topicsWith(ctx, c, prefix)
	if err != nil || len(names) == 0 {
		return err
	}
	resp, err := c.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: names})
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if err := resp.Errors[n]; err != nil && !errors.Is(err, kafka.UnknownTopicOrPartition) {
			errs = append(errs, errors.New(n+": "+err.Error()))
		}
	}
	return errors.Join(errs...)
}

// Package topics creates handoff's Kafka topics when they are missing, so
// that a fresh broker works without manual setup.
package topics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// MaxMessageBytes is the max.message.bytes handoff sets on the topics it
// creates: above the 1 MiB event limit, so that an oversized event reaches
// the ingester and is dead-lettered (with its original bytes) instead of
// being refused by the broker where nobody sees it.
const MaxMessageBytes = 8 << 20

// MaxBatchBytes is the most a producer may put in one request (one record
// batch per partition) to handoff's topics: the broker checks
// max.message.bytes against the whole record batch, so a writer batching
// more than that has every large request refused, for ever. The margin is
// for the record batch's own framing.
const MaxBatchBytes = MaxMessageBytes - 16<<10

// Spec describes one topic to create.
type Spec struct {
	Name              string
	Partitions        int // default 1
	ReplicationFactor int // default 1
	// Compact creates the topic with cleanup.policy=compact: the latest
	// record of every key is kept for ever (a state topic), not deleted
	// with the retention.
	Compact bool
}

// Ensure creates the topics that do not exist yet and waits (until ctx is
// done) until the brokers report them with leaders for every partition.
// Existing topics are left as they are.
func Ensure(ctx context.Context, brokers []string, specs ...Spec) error {
	if len(brokers) == 0 {
		return fmt.Errorf("kafka: no brokers given: set HANDOFF_KAFKA_BROKERS or --kafka-brokers (host:port[,host:port...])")
	}
	// A transport of its own, not kafka.DefaultTransport: a shared pool
	// remembers a failed connection for its metadata TTL, so a retry right
	// after a broker blip would fail again without trying.
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 15 * time.Second, Transport: tr}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return fmt.Errorf("kafka %s: read metadata of topics %s: %w (is the broker running? locally: bash deploy/services/up.sh)", strings.Join(brokers, ","), strings.Join(names, ", "), err)
	}
	exists := map[string]bool{}
	for _, t := range meta.Topics {
		if t.Error == nil && len(t.Partitions) > 0 {
			exists[t.Name] = true
		}
	}
	var create []kafka.TopicConfig
	for _, s := range specs {
		if exists[s.Name] {
			continue
		}
		p, rf := s.Partitions, s.ReplicationFactor
		if p <= 0 {
			p = 1
		}
		if rf <= 0 {
			rf = 1
		}
		conf := []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: strconv.Itoa(MaxMessageBytes)}}
		if s.Compact {
			conf = append(conf, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
		}
		create = append(create, kafka.TopicConfig{Topic: s.Name, NumPartitions: p, ReplicationFactor: rf, ConfigEntries: conf})
	}
	if len(create) == 0 {
		return nil
	}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: create})
	if err != nil {
		return fmt.Errorf("kafka %s: create topics: %w (create them by hand if this user may not)", strings.Join(brokers, ","), err)
	}
	for name, terr := range resp.Errors {
		if terr != nil && !errors.Is(terr, kafka.TopicAlreadyExists) {
			return fmt.Errorf("kafka: create topic %s: %w", name, terr)
		}
	}
	// Wait until every created topic has leaders.
	var want []string
	for _, c := range create {
		want = append(want, c.Topic)
	}
	// Then until kafka.DefaultTransport, which writers and readers share by
	// default, sees them too: its cached metadata would otherwise answer
	// "unknown topic" to a writer of the new topic for a while.
	shared := &kafka.Client{Addr: client.Addr, Timeout: 15 * time.Second}
	for {
		meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: want})
		if err == nil && ready(meta, want) {
			if meta, err := shared.Metadata(ctx, &kafka.MetadataRequest{Topics: want}); err == nil && ready(meta, want) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka: topics %s created but not ready: %w", strings.Join(want, ", "), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ready(meta *kafka.MetadataResponse, want []string) bool {
	ok := map[string]bool{}
	for _, t := range meta.Topics {
		if t.Error != nil || len(t.Partitions) == 0 {
			continue
		}
		all := true
		for _, p := range t.Partitions {
			if p.Leader.Host == "" || p.Error != nil {
				all = false
			}
		}
		ok[t.Name] = all
	}
	for _, w := range want {
		if !ok[w] {
			return false
		}
	}
	return true
}

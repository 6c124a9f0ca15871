// Command load fills a Kafka topic with delivery events from a JSON-lines
// file, as fast as it can, for deploy/bench/ingest.sh: the benchmark loads
// the topic first and measures the consumers afterwards.
//
//	go run ./deploy/bench/load -in .data/bench/events.jsonl -n 1000000 \
//	    -brokers 127.0.0.1:19092 -topic handoff.bench.x -partitions 4
//
// It sends the first -n lines that are valid events (model.Decoder) with an
// event_id not seen before, so the topic holds exactly -n distinct events
// and `SELECT count()` of the table they land in can reach exactly -n
// whatever background merges do. Invalid lines and repeated event_ids are
// skipped (counted on stderr); fewer than -n usable lines is an error. Each
// message is the original line, keyed like `handoff emit` keys it
// (model.Event.PartitionKey with the Murmur2 balancer), so one batch's events
// share a partition. The topic is created when missing (-partitions).
//
// -start-groups g1,g2 then commits offset 0 of every partition for those
// consumer groups (which must not have members yet). ClickHouse 18.16's
// Kafka engine leaves librdkafka's auto.offset.reset at its default,
// "latest": a new group would skip everything already in the topic.
// With a committed offset it starts there instead.
//
// Cleanup mode: -delete-topics t1,t2 and/or -delete-groups g1,g2 delete
// those topics and consumer groups (missing ones are not an error) and
// load nothing.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
)

func main() {
	var (
		in         = flag.String("in", "", "JSON-lines event file (required)")
		n          = flag.Int("n", 1_000_000, "distinct valid events to send")
		brokers    = flag.String("brokers", os.Getenv("HANDOFF_KAFKA_BROKERS"), "Kafka brokers host:port[,...] (HANDOFF_KAFKA_BROKERS)")
		topic      = flag.String("topic", "", "topic to fill (required)")
		partitions = flag.Int("partitions", 4, "partitions of the topic when it is created")
		chunk      = flag.Int("chunk", 100_000, "messages per WriteMessages call")
		batch      = flag.Int("batch", 20_000, "kafka-go Writer BatchSize (messages per produce request and partition)")
		timeout    = flag.Duration("timeout", 5*time.Minute, "give up after this long")
		groups     = flag.String("start-groups", "", "comma-separated consumer groups to commit offset 0 for, on every partition, after loading")
		delTopics  = flag.String("delete-topics", "", "cleanup mode: comma-separated topics to delete")
		delGroups  = flag.String("delete-groups", "", "cleanup mode: comma-separated consumer groups to delete")
	)
	flag.Parse()
	if *delTopics != "" || *delGroups != "" {
		if *brokers == "" {
			fatal(fmt.Errorf("need -brokers (or HANDOFF_KAFKA_BROKERS)"))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cleanup(ctx, strings.Split(*brokers, ","), list(*delTopics), list(*delGroups)); err != nil {
			fatal(err)
		}
		return
	}
	if *in == "" || *topic == "" || *brokers == "" || *n <= 0 {
		fatal(fmt.Errorf("need -in, -topic, -brokers (or HANDOFF_KAFKA_BROKERS) and -n > 0"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	bl := strings.Split(*brokers, ",")

	t0 := time.Now()
	msgs, stats, err := read(*in, *n)
	if err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "load: read %d lines of %s in %v: %d events to send (%.1f MB, %.0f bytes avg), skipped %d invalid and %d repeated event_ids\n",
		stats.lines, *in, time.Since(t0).Round(time.Millisecond), len(msgs), float64(stats.bytes)/1e6, float64(stats.bytes)/float64(len(msgs)),
		stats.invalid, stats.repeated)

	if err := topics.Ensure(ctx, bl, topics.Spec{Name: *topic, Partitions: *partitions, ReplicationFactor: 1}); err != nil {
		fatal(err)
	}
	w := &kafka.Writer{
		Addr:         kafka.TCP(bl...),
		Topic:        *topic,
		Balancer:     &kafka.Murmur2Balancer{}, // as handoff emit: same key, same partition
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    *batch,
		BatchBytes:   topics.MaxMessageBytes,
		MaxAttempts:  5,
		WriteTimeout: time.Minute,
		ReadTimeout:  time.Minute,
	}
	t1 := time.Now()
	for i := 0; i < len(msgs); i += *chunk {
		if err := w.WriteMessages(ctx, msgs[i:min(i+*chunk, len(msgs))]...); err != nil {
			fatal(fmt.Errorf("write to topic %s at %s: %w", *topic, *brokers, err))
		}
	}
	if err := w.Close(); err != nil {
		fatal(fmt.Errorf("close writer: %w", err))
	}
	el := time.Since(t1)
	fmt.Fprintf(os.Stderr, "load: produced %d events to %s (%d partitions) in %v: %.0f events/s, %.1f MB/s\n",
		len(msgs), *topic, *partitions, el.Round(time.Millisecond), float64(len(msgs))/el.Seconds(), float64(stats.bytes)/1e6/el.Seconds())
	if *groups != "" {
		if err := startGroups(ctx, bl, *topic, strings.Split(*groups, ",")); err != nil {
			fatal(err)
		}
	}
}

// startGroups commits offset 0 on every partition of topic for each group.
func startGroups(ctx context.Context, brokers []string, topic string, groups []string) error {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", topic, err)
	}
	var commits []kafka.OffsetCommit
	for _, t := range meta.Topics {
		for _, p := range t.Partitions {
			commits = append(commits, kafka.OffsetCommit{Partition: p.ID, Offset: 0})
		}
	}
	if len(commits) == 0 {
		return fmt.Errorf("topic %s has no partitions", topic)
	}
	for _, g := range groups {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		resp, err := client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
			GroupID: g, GenerationID: -1, Topics: map[string][]kafka.OffsetCommit{topic: commits},
		})
		if err != nil {
			return fmt.Errorf("commit offset 0 for group %s: %w", g, err)
		}
		for _, ps := range resp.Topics {
			for _, p := range ps {
				if p.Error != nil {
					return fmt.Errorf("commit offset 0 for group %s, partition %d: %w", g, p.Partition, p.Error)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "load: group %s starts at offset 0 of %d partitions\n", g, len(commits))
	}
	return nil
}

func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// cleanup deletes consumer groups, then topics. Groups and topics that do
// not exist are skipped.
func cleanup(ctx context.Context, brokers, topicNames, groups []string) error {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second}
	var errs []string
	if len(groups) > 0 {
		resp, err := client.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: groups})
		if err != nil {
			errs = append(errs, fmt.Sprintf("delete groups %s: %v", strings.Join(groups, ","), err))
		} else {
			for g, err := range resp.Errors {
				if err != nil && !errors.Is(err, kafka.GroupIdNotFound) {
					errs = append(errs, fmt.Sprintf("delete group %s: %v", g, err))
				}
			}
		}
	}
	if len(topicNames) > 0 {
		resp, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: topicNames})
		if err != nil {
			errs = append(errs, fmt.Sprintf("delete topics %s: %v", strings.Join(topicNames, ","), err))
		} else {
			for t, err := range resp.Errors {
				if err != nil && !errors.Is(err, kafka.UnknownTopicOrPartition) {
					errs = append(errs, fmt.Sprintf("delete topic %s: %v", t, err))
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleanup: %s", strings.Join(errs, "; "))
	}
	return nil
}

type stats struct {
	lines, invalid, repeated int
	bytes                    int64
}

// read returns the first n valid, distinct events of file as messages.
func read(file string, n int) ([]kafka.Message, stats, error) {
	var st stats
	f, err := os.Open(file)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), model.MaxEventSize+1024)
	seen := make(map[string]struct{}, n)
	msgs := make([]kafka.Message, 0, n)
	var dec model.Decoder
	for len(msgs) < n && sc.Scan() {
		st.lines++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		e, err := dec.Decode(line)
		if err != nil {
			st.invalid++
			continue
		}
		if _, dup := seen[e.ID]; dup {
			st.repeated++
			continue
		}
		seen[e.ID] = struct{}{}
		msgs = append(msgs, kafka.Message{Key: []byte(e.PartitionKey()), Value: append([]byte(nil), line...)})
		st.bytes += int64(len(line))
	}
	if err := sc.Err(); err != nil {
		return nil, st, fmt.Errorf("read %s: %w", file, err)
	}
	if len(msgs) < n {
		return nil, st, fmt.Errorf("%s has only %d valid distinct events (of %d lines), want %d: generate a bigger file", file, len(msgs), st.lines, n)
	}
	return msgs, st, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "load:", err)
	os.Exit(1)
}

package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Codecs reads topic from the start up to its end offsets at the time of
// the call and counts its records by the compression of the batch each
// was written in ("none", "gzip", "snappy", "lz4", "zstd"): what a
// producer chose is visible only on the wire, which kafka-go's readers
// hide.
func Codecs(t testing.TB, brokers []string, topic string) map[string]int {
	t.Helper()
	want := int64(0)
	for _, end := range EndOffsets(t, brokers, topic) {
		want += end
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatalf("kafka client for %s: %v", topic, err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := map[string]int{}
	for got := int64(0); got < want; {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %d of %d records after a minute", topic, got, want)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("read %s partition %d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			out[codecName(r.Attrs.CompressionType())]++
			got++
		})
	}
	return out
}

// codecName names a record batch's compression type.
func codecName(ct uint8) string {
	switch ct {
	case 0:
		return "none"
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return "unknown"
}

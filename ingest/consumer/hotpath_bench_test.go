package consumer

import (
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// hotPathChunk is a chunk of typical events as the fetch loop hands it to
// a decode worker: testenv's mix of types, attrs on some, and (unless
// plain) errors and attrs with escapes and non-ASCII text; plain events
// have none, as most producers write them.
func hotPathChunk(b *testing.B, plain bool) ([]kafka.Message, int64) {
	events := testenv.Events(chunkSize, "pipe.bench", 11)
	if plain {
		for i := range events {
			e := &events[i]
			if e.Error != "" {
				e.Error = "exit status 2"
			}
			if _, ok := e.Attrs["z"]; ok {
				e.Attrs["z"] = "nested"
			}
		}
	}
	msgs := make([]kafka.Message, len(events))
	var n int64
	for i := range events {
		msgs[i] = kafka.Message{Topic: "handoff.events", Partition: i % 4, Offset: int64(i),
			Key: []byte(events[i].PartitionKey()), Value: events[i].AppendJSON(nil)}
		n += int64(len(msgs[i].Value))
	}
	return msgs, n
}

// BenchmarkDecodeChunk measures the ingester's CPU per event between the
// Kafka reader and the INSERT: decode, validate and append to the batch's
// columns (decodeChunk), then make the driver's column values of a block
// (AppendColumns), for chunks of chunkSize messages. Reports ns and
// allocations per event.
//
//	go test ./ingest/consumer -run '^$' -bench DecodeChunk -benchmem
func BenchmarkDecodeChunk(b *testing.B) {
	for _, plain := range []bool{false, true} {
		name := "mixed"
		if plain {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) { benchmarkDecodeChunk(b, plain) })
	}
}

func benchmarkDecodeChunk(b *testing.B, plain bool) {
	msgs, size := hotPathChunk(b, plain)
	recs := make([]record, len(msgs))
	for i, m := range msgs {
		recs[i] = record{key: m.Key, value: m.Value, offset: m.Offset, partition: int32(m.Partition)}
	}
	c := &Consumer{dec: make([]model.Decoder, 1)}
	d := &decoded{evb: make([]schema.EventBatch, 1), dead: make([][]schema.DeadLetter, 1), last: []kafka.Message{}}
	var buf schema.ColumnBuffers
	b.SetBytes(size)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		d.reset(time.Unix(1790000000, 0))
		c.decodeChunk(d, 0, recs)
		if len(d.dead[0]) > 0 || d.evb[0].Len() != len(msgs) {
			b.Fatalf("%d of %d events decoded, %d dead letters", d.evb[0].Len(), len(msgs), len(d.dead[0]))
		}
		_ = d.evb[0].AppendColumns(&buf, 0, d.evb[0].Len())
	}
	reportPerEvent(b, cpu0, len(msgs))
}

// BenchmarkDecodeViewChunk is BenchmarkDecodeChunk's decode and validate
// alone (model.Decoder.DecodeView), without the column appends.
func BenchmarkDecodeViewChunk(b *testing.B) {
	msgs, size := hotPathChunk(b, false)
	var dec model.Decoder
	b.SetBytes(size)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		for i := range msgs {
			if _, err := dec.DecodeView(msgs[i].Value); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportPerEvent(b, cpu0, len(msgs))
}

// cpuTime is the process's user+system CPU time: on a shared machine the
// wall time of a benchmark says more about the neighbours than the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerEvent reports wall and CPU nanoseconds per event of b's loop,
// which handled perOp events per iteration.
func reportPerEvent(b *testing.B, cpu0 time.Duration, perOp int) {
	n := float64(b.N * perOp)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/n, "cpu-ns/event")
}

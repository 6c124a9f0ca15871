package consumer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
)

// encodeBatch is a record batch as Kafka stores and fetches it (kafka-go's
// own encoder, the one its producers use), at base offset base, of records
// whose values are "v<offset>" and keys "k<offset>" (a nil key where
// nilKey).
func encodeBatch(t testing.TB, base int64, n int, codec compress.Compression, control, nilKey bool) []byte {
	t.Helper()
	recs := make([]protocol.Record, n)
	for i := range recs {
		off := base + int64(i)
		recs[i] = protocol.Record{Offset: int64(i), Time: time.Unix(1790000000, 0),
			Value: protocol.NewBytes([]byte(fmt.Sprintf("v%d", off)))}
		if !nilKey {
			recs[i].Key = protocol.NewBytes([]byte(fmt.Sprintf("k%d", off)))
		}
	}
	attrs := protocol.Attributes(codec)
	if control {
		attrs |= protocol.Control
	}
	rs := protocol.RecordSet{Version: 2, Attributes: attrs, Records: protocol.NewRecordReader(recs...)}
	var buf bytes.Buffer
	if _, err := rs.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()[4:] // the record set's size
	binary.BigEndian.PutUint64(b, uint64(base))
	return b
}

func concat(bs ...[]byte) []byte { return slices.Concat(bs...) }

// offsetsOf returns the records' offsets, and checks each record's key
// and value against its offset.
func offsetsOf(t *testing.T, recs []record, nilKeys bool) []int64 {
	t.Helper()
	var out []int64
	for _, r := range recs {
		if string(r.value) != fmt.Sprintf("v%d", r.offset) {
			t.Errorf("record %d: value %q", r.offset, r.value)
		}
		if want := fmt.Sprintf("k%d", r.offset); (nilKeys && r.key != nil) || (!nilKeys && string(r.key) != want) {
			t.Errorf("record %d: key %q", r.offset, r.key)
		}
		if r.partition != 3 {
			t.Errorf("record %d: partition %d, want 3", r.offset, r.partition)
		}
		out = append(out, r.offset)
	}
	return out
}

func seq(lo, hi int64) []int64 {
	var out []int64
	for o := lo; o < hi; o++ {
		out = append(out, o)
	}
	return out
}

func TestAppendRecords(t *testing.T) {
	plain := encodeBatch(t, 100, 5, 0, false, false)
	lz4 := encodeBatch(t, 105, 4, compress.Lz4, false, false)
	control := encodeBatch(t, 109, 1, 0, true, false)
	after := encodeBatch(t, 110, 2, compress.Gzip, false, false)
	for _, tt := range []struct {
		name    string
		data    []byte
		from    int64
		nilKeys bool
		want    []int64
		next    int64
	}{
		{"one batch", plain, 100, false, seq(100, 105), 105},
		{"from the middle of the first batch", concat(plain, lz4), 102, false, seq(102, 109), 109},
		{"compressed batches, a control batch skipped", concat(plain, lz4, control, after), 100, false, append(seq(100, 109), 110, 111), 112},
		{"only a control batch: the offset moves past it", control, 109, false, nil, 110},
		{"batches before the offset asked for", concat(plain, lz4), 107, false, seq(107, 109), 109},
		{"last batch cut short", concat(plain, lz4[:len(lz4)-3]), 100, false, seq(100, 105), 105},
		{"cut inside the length", concat(plain, lz4[:7]), 100, false, seq(100, 105), 105},
		{"null keys", encodeBatch(t, 7, 3, compress.Snappy, false, true), 7, true, seq(7, 10), 10},
		{"zstd", encodeBatch(t, 0, 3, compress.Zstd, false, false), 0, false, seq(0, 3), 3},
		{"nothing", nil, 42, false, nil, 42},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs, next, err := appendRecords(nil, tt.data, 3, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			if got := offsetsOf(t, recs, tt.nilKeys); !slices.Equal(got, tt.want) || next != tt.next {
				t.Errorf("offsets %v, next %d; want %v, next %d", got, next, tt.want, tt.next)
			}
		})
	}
}

// TestAppendRecordsMalformed: a corrupt batch is an error that names it;
// the records of the batches before it are returned.
func TestAppendRecordsMalformed(t *testing.T) {
	plain := encodeBatch(t, 100, 5, 0, false, false)
	flipped := slices.Clone(encodeBatch(t, 105, 2, 0, false, false))
	flipped[len(flipped)-2] ^= 0xff
	v1 := slices.Clone(plain)
	v1[16] = 1
	short := slices.Clone(plain)
	binary.BigEndian.PutUint32(short[8:], 20)
	for _, tt := range []struct {
		name string
		data []byte
		want []int64
	}{
		{"bad CRC", concat(plain, flipped), seq(100, 105)},
		{"message format v1", v1, nil},
		{"length shorter than the header", short, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs, _, err := appendRecords(nil, tt.data, 3, 100)
			if !errors.Is(err, errBatch) {
				t.Fatalf("error %v, want a malformed batch", err)
			}
			if got := offsetsOf(t, recs, false); !slices.Equal(got, tt.want) {
				t.Errorf("offsets %v before the error, want %v", got, tt.want)
			}
		})
	}
}

// FuzzAppendRecords: whatever the bytes, the decoder neither panics nor
// returns records out of order, before the offset asked for, or reaching
// outside the data; and the offset to fetch next never goes back.
func FuzzAppendRecords(f *testing.F) {
	f.Add(encodeBatch(f, 0, 3, 0, false, false), int64(0), true)
	f.Add(concat(encodeBatch(f, 10, 4, compress.Lz4, false, false), encodeBatch(f, 14, 1, 0, true, false)), int64(12), true)
	f.Add(encodeBatch(f, 5, 2, compress.Gzip, false, true), int64(5), false)
	f.Fuzz(func(t *testing.T, data []byte, from int64, fixCRC bool) {
		if fixCRC {
			// Past the CRC, to the records' decoding.
			data = withCRCs(data)
		}
		recs, next, err := appendRecords(nil, data, 0, from)
		if next < from {
			t.Fatalf("next %d before from %d", next, from)
		}
		for i, r := range recs {
			if r.offset < from || (i > 0 && r.offset <= recs[i-1].offset) {
				t.Fatalf("record %d at offset %d (from %d)", i, r.offset, from)
			}
		}
		if err == nil && len(recs) > 0 && next <= recs[len(recs)-1].offset {
			t.Fatalf("next %d, last record %d", next, recs[len(recs)-1].offset)
		}
	})
}

// withCRCs returns a copy of data with each batch's CRC set to what its
// bytes hash to.
func withCRCs(data []byte) []byte {
	data = slices.Clone(data)
	for b := data; len(b) >= batchHeaderSize; {
		n := int64(int32(binary.BigEndian.Uint32(b[8:])))
		if n < batchHeaderSize-batchLengthEnd || n > int64(len(b)-batchLengthEnd) {
			break
		}
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[batchCRCEnd:batchLengthEnd+n], crc32c))
		b = b[batchLengthEnd+n:]
	}
	return data
}

// TestHandOverOffset: the offset handOver returns is the one after the
// last record it handed over, whatever the fetch loop does with a run once
// it has it (it recycles the run, and another fetcher refills it). The
// fetchers once read the run after handing it over and, now and then,
// jumped to an offset of another partition, skipping ~20,000 records; go
// test -race reports that read every time.
func TestHandOverOffset(t *testing.T) {
	g := &group{c: &Consumer{}, out: make(chan fetched), spare: make(chan []record, 16)}
	const n = 3 * chunkSize
	data := encodeBatch(t, 0, n, 0, false, false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := range g.out {
			// What another fetcher's records look like in a recycled run.
			for i := range f.recs {
				f.recs[i].offset = 1 << 40
			}
			g.spare <- f.recs[:0]
		}
	}()
	for i := 0; i < 50; i++ {
		_, next, err := g.handOver(context.Background(), nil, fetchResult{records: data}, 0, 0)
		if err != nil || next != n {
			t.Fatalf("hand-over %d: next offset %d, %v; want %d", i, next, err, n)
		}
	}
	close(g.out)
	<-done
}

package consumer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/segmentio/kafka-go/compress"
)

// Kafka's record batches (message format v2, the only one Kafka 4 writes),
// decoded in place: a record's key and value are slices of the fetch
// response (or, for a compressed batch, of the batch's decompressed
// records), so reading a record allocates nothing. kafka-go's
// Batch.ReadMessage allocated a key and a value per message, 12-15% of the
// ingester's CPU per event.
//
// A batch is
//
//	baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
//	magic int8 (2), crc uint32 (CRC-32C of what follows it),
//	attributes int16, lastOffsetDelta int32, baseTimestamp int64,
//	maxTimestamp int64, producerId int64, producerEpoch int16,
//	baseSequence int32, recordCount int32, records
//
// and a record is
//
//	length varint, attributes int8, timestampDelta varint,
//	offsetDelta varint, keyLength varint, key, valueLength varint, value,
//	headerCount varint, headers (keyLength varint, key, valueLength varint, value)
//
// with the records compressed as one stream when attributes&7 is not 0.

const (
	batchHeaderSize = 61 // baseOffset up to and including recordCount
	// batchLengthOffset is where batchLength ends: batchLength counts the
	// bytes after it.
	batchLengthEnd = 12
	batchCRCEnd    = 21 // the CRC covers the bytes from here to the end
	attrCodecMask  = 0x07
	attrControl    = 0x20
	// maxRecordsBytes bounds a decompressed batch (a corrupt or hostile
	// batch could claim to inflate without limit): the largest message the
	// topics accept, many times over.
	maxRecordsBytes = 256 << 20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// errBatch is wrapped by every error about a malformed record batch.
var errBatch = errors.New("malformed Kafka record batch")

// appendRecords decodes the record batches of one partition's fetch
// response (data: the partition's records as the broker sent them) and
// appends to recs the records at offsets >= from, in offset order. It
// returns recs and the offset to fetch from next: past the last complete
// batch (control batches, and records compacted away at a batch's end,
// included), at least from. The broker may cut the last batch short (it
// fills the response up to its byte limit); that batch is left for the
// next fetch. Keys and values alias data (or a decompressed copy):
// nothing may modify data while the records are in use.
func appendRecords(recs []record, data []byte, partition int32, from int64) ([]record, int64, error) {
	next := from
	for len(data) >= batchLengthEnd {
		base := int64(binary.BigEndian.Uint64(data))
		length := int64(int32(binary.BigEndian.Uint32(data[8:])))
		if length < batchHeaderSize-batchLengthEnd {
			return recs, next, fmt.Errorf("%w at offset %d: batch length %d is shorter than its header", errBatch, base, length)
		}
		if int64(len(data))-batchLengthEnd < length {
			break // cut short by the broker: fetched again next time
		}
		b := data[:batchLengthEnd+length]
		data = data[len(b):]
		if magic := b[16]; magic != 2 {
			return recs, next, fmt.Errorf("%w at offset %d: message format v%d, want v2 (Kafka 0.11 or later writes v2)", errBatch, base, magic)
		}
		if got, want := crc32.Checksum(b[batchCRCEnd:], crc32c), binary.BigEndian.Uint32(b[17:]); got != want {
			return recs, next, fmt.Errorf("%w at offset %d: CRC %08x, the batch says %08x", errBatch, base, got, want)
		}
		attrs := binary.BigEndian.Uint16(b[21:])
		lastDelta := int64(int32(binary.BigEndian.Uint32(b[23:])))
		count := int(int32(binary.BigEndian.Uint32(b[57:])))
		if lastDelta < 0 || count < 0 {
			return recs, next, fmt.Errorf("%w at offset %d: last offset delta %d, %d records", errBatch, base, lastDelta, count)
		}
		end := base + lastDelta + 1
		if attrs&attrControl != 0 || end <= next {
			// A transaction's commit or abort marker, or records before
			// the offset asked for (a fetch returns whole batches).
			next = max(next, end)
			continue
		}
		body := b[batchHeaderSize:]
		if codec := attrs & attrCodecMask; codec != 0 {
			var err error
			if body, err = decompress(compress.Compression(codec), body); err != nil {
				return recs, next, fmt.Errorf("%w at offset %d: %w", errBatch, base, err)
			}
		}
		var err error
		if recs, err = appendBatchRecords(recs, body, count, base, lastDelta, partition, next); err != nil {
			return recs, next, err
		}
		next = max(next, end)
	}
	return recs, next, nil
}

// appendBatchRecords decodes the count records of one batch (body) at base
// offset base, appending those at offsets >= from. Offset deltas increase
// from record to record up to lastDelta (compaction leaves gaps, never
// reorders).
func appendBatchRecords(recs []record, body []byte, count int, base, lastDelta int64, partition int32, from int64) ([]record, error) {
	prev := int64(-1)
	for i := 0; i < count; i++ {
		n, w := binary.Varint(body)
		if w <= 0 || n < 0 || n > int64(len(body)-w) {
			return recs, fmt.Errorf("%w at offset %d: record %d of %d: bad length", errBatch, base, i, count)
		}
		r := body[w : w+int(n)]
		body = body[w+int(n):]
		if len(r) < 1 {
			return recs, fmt.Errorf("%w at offset %d: record %d of %d is empty", errBatch, base, i, count)
		}
		r = r[1:] // attributes: unused
		var ok bool
		if _, r, ok = varint(r); !ok { // timestamp delta
			return recs, fmt.Errorf("%w at offset %d: record %d of %d: bad timestamp", errBatch, base, i, count)
		}
		delta, r, ok := varint(r)
		if !ok || delta <= prev || delta > lastDelta {
			return recs, fmt.Errorf("%w at offset %d: record %d of %d: bad offset delta", errBatch, base, i, count)
		}
		key, r, ok := varbytes(r)
		if !ok {
			return recs, fmt.Errorf("%w at offset %d: record %d of %d: bad key", errBatch, base, i, count)
		}
		value, _, ok := varbytes(r)
		if !ok {
			return recs, fmt.Errorf("%w at offset %d: record %d of %d: bad value", errBatch, base, i, count)
		}
		// Headers follow; the pipeline reads none.
		prev = delta
		if off := base + delta; off >= from {
			recs = append(recs, record{key: key, value: value, offset: off, partition: partition})
		}
	}
	return recs, nil
}

// varint reads a zig-zag varint off b.
func varint(b []byte) (int64, []byte, bool) {
	v, w := binary.Varint(b)
	if w <= 0 {
		return 0, b, false
	}
	return v, b[w:], true
}

// varbytes reads a length-prefixed byte string off b (length -1: null,
// returned as nil).
func varbytes(b []byte) ([]byte, []byte, bool) {
	n, b, ok := varint(b)
	switch {
	case !ok || n < -1 || n > int64(len(b)):
		return nil, b, false
	case n == -1:
		return nil, b, true
	}
	return b[:n:n], b[n:], true
}

// decompress inflates a compressed batch's records into a new buffer.
func decompress(c compress.Compression, body []byte) ([]byte, error) {
	codec := c.Codec()
	if codec == nil {
		return nil, fmt.Errorf("unknown compression codec %d", c)
	}
	r := codec.NewReader(bytes.NewReader(body))
	defer r.Close()
	out := bytes.NewBuffer(make([]byte, 0, 4*len(body)+512))
	if _, err := out.ReadFrom(io.LimitReader(r, maxRecordsBytes+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", codec.Name(), err)
	}
	if out.Len() > maxRecordsBytes {
		return nil, fmt.Errorf("%s: the records inflate to more than %d bytes", codec.Name(), maxRecordsBytes)
	}
	return out.Bytes(), nil
}

package consumer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
)

// fetchConn sends Fetch requests for one partition over its own connection
// to the partition's leader and reads each response whole into one buffer
// its records are decoded from in place (recordbatch.go). Everything else
// (the group, leaders, offsets) stays with kafka-go.
type fetchConn struct {
	conn net.Conn
	r    *bufio.Reader
	corr int32
	req  []byte
}

const (
	apiFetch = 1
	// fetchVersion 4 is the oldest Fetch that Kafka 4 serves (and 0.11
	// the first to serve it): record batches, the last stable offset,
	// aborted transactions; no sessions, tagged fields or topic IDs.
	fetchVersion  = 4
	fetchClientID = "handoff-ingest"
	// maxFetchResponse bounds a response's size as the broker states it:
	// a response holds at least one whole batch, however large, and a
	// batch at most a message of the largest size the topics accept (with
	// room for the headers).
	maxFetchResponse = 2 * topics.MaxMessageBytes
)

func newFetchConn(conn net.Conn) *fetchConn {
	return &fetchConn{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
}

func (f *fetchConn) Close() error { return f.conn.Close() }

// fetchResult is one partition's part of a Fetch response.
type fetchResult struct {
	hwm     int64
	records []byte // record batches, nil when there are none
	// buf holds the response records points into, held once for the
	// caller (nil in tests that make a result by hand).
	buf *respBuf
}

// fetch asks for topic/partition's records from offset, waiting up to
// maxWait on the broker for at least one byte, and reads the response
// into a buffer of pool, on the reservation of reserved bytes the caller
// made (pool.reserve):
// the result holds the buffer once (fetchResult.buf); on an error the
// reservation or the buffer is given back. A partition error of the
// broker is returned as a kafka.Error, so that errors.Is(err,
// kafka.OffsetOutOfRange) holds.
func (f *fetchConn) fetch(pool *respPool, reserved int64, topic string, partition int32, offset int64, maxWait time.Duration, maxBytes int32, deadline time.Time) (fetchResult, error) {
	f.corr++
	f.req = appendFetchRequest(f.req[:0], f.corr, topic, partition, offset, maxWait, maxBytes)
	f.conn.SetDeadline(deadline)
	if _, err := f.conn.Write(f.req); err != nil {
		pool.unreserve(reserved)
		return fetchResult{}, fmt.Errorf("send a fetch of %s/%d: %w", topic, partition, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(f.r, size[:]); err != nil {
		pool.unreserve(reserved)
		return fetchResult{}, fmt.Errorf("read the fetch response of %s/%d: %w", topic, partition, err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxFetchResponse {
		pool.unreserve(reserved)
		return fetchResult{}, fmt.Errorf("read the fetch response of %s/%d: the broker says it has %d bytes (want 4 to %d)", topic, partition, n, maxFetchResponse)
	}
	// The records handed on point into buf: it is recycled once the last
	// of them is decoded.
	buf := pool.get(int(n), reserved)
	if _, err := io.ReadFull(f.r, buf.b); err != nil {
		buf.unref(1)
		return fetchResult{}, fmt.Errorf("read the fetch response of %s/%d: %w", topic, partition, err)
	}
	res, err := parseFetchResponse(buf.b, f.corr, topic, partition)
	if err != nil {
		buf.unref(1)
		return fetchResult{}, fmt.Errorf("fetch response of %s/%d: %w", topic, partition, err)
	}
	res.buf = buf
	return res, nil
}

// appendFetchRequest appends a Fetch v4 request (with its size) for one
// partition, read uncommitted, as kafka-go's Conn.ReadBatch asked.
func appendFetchRequest(b []byte, corr int32, topic string, partition int32, offset int64, maxWait time.Duration, maxBytes int32) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, 0) // size, below
	b = binary.BigEndian.AppendUint16(b, apiFetch)
	b = binary.BigEndian.AppendUint16(b, fetchVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = appendString(b, fetchClientID)
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // replica_id -1: a consumer
	b = binary.BigEndian.AppendUint32(b, uint32(maxWait.Milliseconds()))
	b = binary.BigEndian.AppendUint32(b, 1) // min_bytes
	b = binary.BigEndian.AppendUint32(b, uint32(maxBytes))
	b = append(b, 0)                        // isolation_level: read uncommitted
	b = binary.BigEndian.AppendUint32(b, 1) // topics
	b = appendString(b, topic)
	b = binary.BigEndian.AppendUint32(b, 1) // partitions
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	b = binary.BigEndian.AppendUint64(b, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, uint32(maxBytes))
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// errFetchResponse is wrapped by every error about a malformed response.
var errFetchResponse = errors.New("malformed Kafka fetch response")

// parseFetchResponse reads a Fetch v4 response (after its size) for one
// partition of one topic.
func parseFetchResponse(b []byte, corr int32, topic string, partition int32) (fetchResult, error) {
	p := parser{b: b, ok: true}
	if c := p.int32(); c != corr && p.ok {
		return fetchResult{}, fmt.Errorf("%w: correlation id %d, want %d", errFetchResponse, c, corr)
	}
	p.int32() // throttle_time_ms
	var res fetchResult
	var code int16
	found := false
	for t := p.int32(); t > 0 && p.ok; t-- {
		name := p.string()
		for n := p.int32(); n > 0 && p.ok; n-- {
			id := p.int32()
			ec := p.int16()
			hwm := p.int64()
			p.int64() // last_stable_offset
			if a := p.int32(); a > 0 {
				p.skip(16 * int(a)) // aborted transactions: read uncommitted
			}
			recs := p.bytes()
			if name == topic && id == partition {
				found, code, res = true, ec, fetchResult{hwm: hwm, records: recs}
			}
		}
	}
	switch {
	case !p.ok:
		return fetchResult{}, fmt.Errorf("%w: cut short or bad lengths (%d bytes)", errFetchResponse, len(b))
	case !found:
		return fetchResult{}, fmt.Errorf("%w: no part for the partition asked for", errFetchResponse)
	case code != 0:
		return fetchResult{}, kafka.Error(code)
	}
	return res, nil
}

// parser reads big-endian fields off b; a read past the end clears ok and
// returns zero values from then on.
type parser struct {
	b  []byte
	ok bool
}

func (p *parser) take(n int) []byte {
	if !p.ok {
		return nil
	}
	if n < 0 || n > len(p.b) {
		p.b, p.ok = nil, false
		return nil
	}
	v := p.b[:n:n]
	p.b = p.b[n:]
	return v
}

func (p *parser) skip(n int) { p.take(n) }

func (p *parser) int16() int16 {
	if v := p.take(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

func (p *parser) int32() int32 {
	if v := p.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (p *parser) int64() int64 {
	if v := p.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (p *parser) string() string {
	n := p.int16()
	if n < 0 {
		return ""
	}
	return string(p.take(int(n)))
}

// bytes reads a nullable byte string (nil when null or empty).
func (p *parser) bytes() []byte {
	n := p.int32()
	if n <= 0 {
		return nil
	}
	return p.take(int(n))
}

// Package jsonl reads files of delivery events written as JSON lines (one
// wire-format v1 event per line) fast: the input is cut into large chunks at
// newline boundaries, the chunks are decoded in parallel with one
// model.Decoder per worker, and the results are handed to a single consumer
// in input order.
//
// Read is the entry point:
//
//	stats, err := jsonl.Read(ctx, f, jsonl.Options{}, func(line int, e *model.Event, err error) error {
//		if err != nil {
//			log.Printf("events.jsonl:%d: %v", line, err)
//			return nil // skip the line
//		}
//		set.Add(e)
//		return nil
//	})
package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/handoff-dev/handoff/model"
)

// DefaultChunkSize is the size of the chunks the input is cut into. A line
// longer than a chunk is rejected without being held in memory whole.
const DefaultChunkSize = 4 << 20

// Options tune Read. The zero Options are the defaults.
type Options struct {
	// Workers is the number of decoding goroutines; GOMAXPROCS when <= 0.
	Workers int
	// ChunkSize is the size of the read buffers, at least MaxLineSize+2 (a
	// longest line with its CRLF). DefaultChunkSize when <= 0.
	ChunkSize int
	// MaxLineSize is the longest line accepted, line end excluded; longer
	// lines are rejected with model.RejectTooLarge. model.MaxEventSize when
	// <= 0.
	MaxLineSize int
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.MaxLineSize <= 0 {
		o.MaxLineSize = model.MaxEventSize
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.ChunkSize < o.MaxLineSize+2 {
		o.ChunkSize = o.MaxLineSize + 2
	}
	return o
}

// Stats counts what Read saw.
type Stats struct {
	// Lines is the number of lines read, blank ones included. A last line
	// without a newline counts.
	Lines int
	// Blank is the number of empty or all-white-space lines (skipped).
	Blank int
	// Events is the number of valid events delivered.
	Events int
	// Rejected counts the lines that failed decoding or validation, by
	// reason.
	Rejected map[model.RejectKind]int
	// Bytes is the number of bytes read.
	Bytes int64
}

// RejectedTotal returns the number of rejected lines.
func (s *Stats) RejectedTotal() int {
	n := 0
	for _, v := range s.Rejected {
		n += v
	}
	return n
}

// Func receives each non-blank line's outcome, in input order, from a single
// goroutine: either a valid event or the error that rejected the line (a
// *model.ValidationError). line is 1-based. e and the Event it points to
// are only valid during the call: copy what you keep (the strings inside
// may be kept; they are not shared). A non-nil return stops Read, which
// returns that error.
type Func func(line int, e *model.Event, err error) error

// result is the outcome of one non-blank line.
type result struct {
	line int
	err  error
	ev   model.Event
}

// chunk is a piece of input ending at a line boundary (or at EOF), and the
// results of decoding it.
type chunk struct {
	buf       []byte // backing buffer, cap ChunkSize
	data      []byte // the lines, a prefix of buf
	firstLine int    // line number of data's first line
	lastLine  int    // line number of the last line the chunk accounts for
	bytes     int64  // input bytes the chunk accounts for
	// err is a read error after data (delivered after data's lines).
	err error

	results []result
	blank   int
	done    chan struct{}
}

// Read reads JSON-lines events from r and calls fn for each non-blank line,
// in input order. It returns when r is exhausted, fn returns an error, r
// fails, or ctx is done; the Stats say what was delivered to fn until then.
// Blank lines (empty or white space only) are skipped and counted; a line
// may end in "\n" or "\r\n", and the last one needs no line end.
//
// When ctx is cancelled while a Read of r blocks, Read returns at once and
// one goroutine stays blocked in r.Read until that returns.
func Read(ctx context.Context, r io.Reader, opts Options, fn Func) (Stats, error) {
	opts = opts.withDefaults()
	stats := Stats{Rejected: make(map[model.RejectKind]int)}
	ctx, cancel := context.WithCancel(ctx)

	// inFlight bounds memory: each chunk in flight holds a buffer and its
	// results.
	inFlight := 2*opts.Workers + 2
	pool := make(chan *chunk, inFlight)
	for range inFlight {
		pool <- &chunk{done: make(chan struct{}, 1)}
	}
	work := make(chan *chunk, inFlight)
	ordered := make(chan *chunk, inFlight)

	var wg sync.WaitGroup
	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dec model.Decoder
			for {
				select {
				case c, ok := <-work:
					if !ok {
						return
					}
					decodeChunk(ctx, &dec, c, opts.MaxLineSize)
					c.done <- struct{}{}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(ordered)
		defer close(work)
		split(ctx, r, opts, pool, work, ordered)
	}()
	// Workers stop on cancel or when the splitter closes work; the splitter
	// stops on cancel as soon as it is not blocked in r.Read, which Read
	// does not wait for.
	defer wg.Wait()
	defer cancel()

	for {
		var c *chunk
		var ok bool
		select {
		case c, ok = <-ordered:
		case <-ctx.Done():
			return stats, ctx.Err()
		}
		if !ok {
			// The splitter stopped: at EOF, or because ctx is done.
			return stats, ctx.Err()
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return stats, ctx.Err()
		}
		if err := ctx.Err(); err != nil {
			return stats, err
		}
		stats.Blank += c.blank
		stats.Bytes += c.bytes
		for i := range c.results {
			res := &c.results[i]
			if res.err != nil {
				var ve *model.ValidationError
				kind := model.RejectBadJSON
				if errors.As(res.err, &ve) && ve.Kind != "" {
					kind = ve.Kind
				}
				stats.Rejected[kind]++
				if err := fn(res.line, nil, res.err); err != nil {
					return stats, err
				}
				continue
			}
			stats.Events++
			if err := fn(res.line, &res.ev, nil); err != nil {
				return stats, err
			}
		}
		stats.Lines = c.lastLine
		if c.err != nil {
			return stats, c.err
		}
		c.reset()
		pool <- c
	}
}

func (c *chunk) reset() {
	clear(c.results) // drop references to the events' strings
	c.results = c.results[:0]
	c.data = nil
	c.err = nil
	c.bytes = 0
	c.blank = 0
}

var nl = []byte{'\n'}

// split reads r into chunks that end at line boundaries and sends each to
// both ordered (for the consumer, in input order) and work (for a worker).
func split(ctx context.Context, r io.Reader, opts Options, pool <-chan *chunk, work, ordered chan<- *chunk) {
	line := 1 // number of the next line to start
	// carry holds the start of a line that the previous buffer cut.
	carry := make([]byte, 0, opts.MaxLineSize+2)
	send := func(c *chunk, decode bool) bool {
		select {
		case ordered <- c:
		case <-ctx.Done():
			return false
		}
		if !decode {
			c.done <- struct{}{}
			return true
		}
		select {
		case work <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		var c *chunk
		select {
		case c = <-pool:
		case <-ctx.Done():
			return
		}
		if cap(c.buf) < opts.ChunkSize {
			c.buf = make([]byte, opts.ChunkSize)
		}
		c.buf = c.buf[:cap(c.buf)]
		n := copy(c.buf, carry)
		carry = carry[:0]
		var rerr error
		for n < len(c.buf) && rerr == nil {
			var m int
			m, rerr = r.Read(c.buf[n:])
			n += m
			if ctx.Err() != nil {
				return
			}
		}
		data := c.buf[:n]
		c.firstLine = line
		if rerr != nil {
			// EOF or a read error: everything read is the last chunk.
			c.data = data
			c.bytes = int64(n)
			c.lastLine = line - 1 + bytes.Count(data, nl)
			if n > 0 && data[n-1] != '\n' {
				c.lastLine++
			}
			if rerr != io.EOF {
				c.err = fmt.Errorf("reading events: %w", rerr)
			}
			send(c, n > 0)
			return
		}
		i := bytes.LastIndexByte(data, '\n')
		if i < 0 {
			// A full buffer without a line end: the line is longer than
			// any accepted line. Skip to its end without keeping it.
			size, rest, err := skipLine(r, c.buf, int64(n))
			carry = append(carry, rest...)
			c.data = nil
			c.bytes = size // what follows the newline counts with the next chunk
			if err == nil {
				c.bytes++ // the newline
			}
			c.lastLine = line
			c.results = append(c.results, result{line: line, err: tooLarge(size, opts.MaxLineSize)})
			if err != nil && err != io.EOF {
				c.err = fmt.Errorf("reading events: %w", err)
			}
			if !send(c, false) || err != nil {
				return
			}
			line++
			continue
		}
		c.data = data[:i+1]
		c.bytes = int64(len(c.data))
		line += bytes.Count(c.data, nl)
		c.lastLine = line - 1
		// The incomplete last line moves to the next buffer. Copy it out
		// before sending: the chunk is not ours once sent.
		carry = append(carry, data[i+1:]...)
		if !send(c, true) {
			return
		}
	}
}

// skipLine reads and discards r up to and including the next newline, using
// buf. read bytes of the line were already seen. It returns the line's
// length (without the newline) and what followed the newline in the last
// read, a sub-slice of buf.
func skipLine(r io.Reader, buf []byte, read int64) (int64, []byte, error) {
	size := read
	for {
		n, err := r.Read(buf)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return size + int64(i), buf[i+1 : n], nil
		}
		size += int64(n)
		if err != nil {
			return size, nil, err
		}
	}
}

// decodeChunk decodes every line of c.data into c.results.
func decodeChunk(ctx context.Context, dec *model.Decoder, c *chunk, maxLine int) {
	if ctx.Err() != nil {
		return
	}
	data := c.data
	line := c.firstLine
	for len(data) > 0 {
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
		if blank(l) {
			c.blank++
			line++
			continue
		}
		c.results = append(c.results, result{line: line})
		res := &c.results[len(c.results)-1]
		if len(l) > maxLine {
			res.err = tooLarge(int64(len(l)), maxLine)
		} else {
			// The decoder shares type, system, pipeline and component
			// strings between events, so a million kept events hold a few
			// hundred copies of them.
			res.ev, res.err = dec.Decode(l)
		}
		line++
	}
}

func tooLarge(size int64, limit int) error {
	return &model.ValidationError{
		Reason: fmt.Sprintf("line of %d bytes is over the %d-byte limit", size, limit),
		Kind:   model.RejectTooLarge,
	}
}

func blank(l []byte) bool {
	for _, b := range l {
		if b != ' ' && b != '\t' && b != '\r' {
			return false
		}
	}
	return true
}

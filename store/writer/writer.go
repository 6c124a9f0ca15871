// Package writer writes into ClickHouse: delivery events and dead letters,
// and (InsertColumns) the findings and diagnoses ingest/results stores. It
// is the only writer to handoff's tables, and only the ingest side imports
// it (deploy/check-imports.sh).
//
// Rows are gathered column by column (schema.EventBatch and the other row
// types of store/schema, the schema's one home) and sent
// with PrepareBatch and an explicit column list, which works on ClickHouse
// 18.16 and on current releases. A batch can be sent again after a failure:
// its columns are kept until Reset.
package writer

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// Sink inserts into one handoff database.
type Sink struct {
	conn driver.Conn
	db   string
	// bufs recycles the Go values of the blocks of event INSERTs (a
	// block's columns, ~4 MB).
	bufs chan *schema.ColumnBuffers
	// blockRows is BlockRows (benchmarks change it).
	blockRows int
}

// New returns a Sink writing to database db over conn. The schema must
// exist (schema.Ensure).
func New(conn driver.Conn, db string) (*Sink, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return nil, err
	}
	return &Sink{conn: conn, db: db, bufs: make(chan *schema.ColumnBuffers, 2), blockRows: BlockRows}, nil
}

// Database returns the database the sink writes to.
func (s *Sink) Database() string { return s.db }

// InsertEvents inserts the batches in one INSERT. On error nothing may be
// assumed stored; sending the same batch again is safe because events
// are deduplicated by event_id.
func (s *Sink) InsertEvents(ctx context.Context, bs ...*schema.EventBatch) error {
	p, err := s.PrepareEvents(ctx, bs...)
	if err != nil {
		return err
	}
	return p.Send()
}

// PreparedEvents is an INSERT of events that is prepared (the query sent
// and the server's block structure received) but not sent yet: preparing
// can overlap the previous INSERT. Call Send or Abort exactly once.
type PreparedEvents struct {
	batch driver.Batch
	bs    []*schema.EventBatch
	n     int
	table string // database.table
	bufs  chan *schema.ColumnBuffers
	rows  int // per block
}

// Add adds batches to the INSERT before it is sent: the rows are sent by
// Send, so an INSERT prepared for one batch can take the batches that are
// ready by the time it is sent.
func (p *PreparedEvents) Add(bs ...*schema.EventBatch) {
	for _, b := range bs {
		if b.Len() > 0 {
			p.n += b.Len()
			p.bs = append(p.bs, b)
		}
	}
}

// BlockRows is how many rows an INSERT of events sends per block. The
// driver holds one block at a time (its copy of the columns, then the
// encoded block), not the whole INSERT: with 100,000-row INSERTs of ~300-byte
// events the whole block took ~100 MB. The server squashes the blocks of
// one INSERT into one part per partition (min_insert_block_size_rows, 1M
// rows by default, on 18.16 as on current releases), so smaller blocks do
// not mean more parts. Smaller blocks also cost the ingester less CPU per
// event (BenchmarkInsertEvents: the block's copies stay in the cache; at
// 65,536 rows the driver took twice the CPU per event of 16,384, and 8,192
// about a fifth less than 16,384), at no measurable cost to the server.
const BlockRows = 8192

// PrepareEvents starts an INSERT of the batches; ctx bounds the INSERT
// until Send returns. It returns nil and no error when the batches are
// empty (Send and Abort of nil do nothing). The batches must stay
// unchanged until Send or Abort returns.
func (s *Sink) PrepareEvents(ctx context.Context, bs ...*schema.EventBatch) (*PreparedEvents, error) {
	n := 0
	var nonEmpty []*schema.EventBatch
	for _, b := range bs {
		if b.Len() > 0 {
			n += b.Len()
			nonEmpty = append(nonEmpty, b)
		}
	}
	if n == 0 {
		return nil, nil
	}
	table := s.db + "." + schema.Events
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+table+" ("+schema.EventColumns+")")
	if err != nil {
		return nil, fmt.Errorf("insert %d events into %s: prepare: %w", n, table, err)
	}
	return &PreparedEvents{batch: batch, bs: nonEmpty, n: n, table: table, bufs: s.bufs, rows: s.blockRows}, nil
}

// Send sends the rows, BlockRows at a time, and waits for ClickHouse's
// acknowledgement. On error nothing may be assumed stored.
//
// The rows go in the order they were decoded. ClickHouse sorts each part
// by the table's key, and rows sent already sorted by business_date and
// pipeline cost its INSERT less (INSERT ... SELECT of 100,000 benchmark
// events on 18.16: 209 ms of user CPU, against 284 ms in the order the
// ingester decodes them), but sorting the rows here and gathering them in
// that order cost the ingester ~0.6 us per event, as much as the server
// saved: the rows' values are then read far apart, a few cache misses a
// row.
func (p *PreparedEvents) Send() error {
	if p == nil {
		return nil
	}
	what := fmt.Sprintf("insert %d events into %s", p.n, p.table)
	var buf *schema.ColumnBuffers
	select {
	case buf = <-p.bufs:
	default:
		buf = new(schema.ColumnBuffers)
	}
	defer func() {
		select {
		case p.bufs <- buf:
		default:
		}
	}()
	for j, b := range p.bs {
		for lo := 0; lo < b.Len(); lo += p.rows {
			hi := min(lo+p.rows, b.Len())
			// The driver copies the columns: buf is free again after.
			for i, c := range b.AppendColumns(buf, lo, hi) {
				if err := appendColumn(p.batch.Column(i), c); err != nil {
					_ = p.batch.Abort()
					return fmt.Errorf("%s: column %d: %w", what, i, err)
				}
			}
			if hi == b.Len() && j == len(p.bs)-1 {
				break // the last block goes with Send
			}
			if err := p.batch.Flush(); err != nil {
				_ = p.batch.Abort()
				return fmt.Errorf("%s: send block: %w", what, err)
			}
		}
	}
	if err := p.batch.Send(); err != nil {
		return fmt.Errorf("%s: send: %w", what, err)
	}
	return nil
}

// appendColumn appends a block's values of one column. The driver appends
// a [][]string (the attrs arrays) by reflection, row by row and element by
// element (~5% of the ingester's CPU); row by row its typed path is used.
// The rows without attrs, most of them, pass one boxed empty slice: a
// slice made an interface value is an allocation per row (~4% of the
// ingester's CPU).
func appendColumn(col driver.BatchColumn, c any) error {
	rows, ok := c.([][]string)
	if !ok {
		return col.Append(c)
	}
	for _, r := range rows {
		v := noAttrs
		if len(r) > 0 {
			v = r
		}
		if err := col.AppendRow(v); err != nil {
			return err
		}
	}
	return nil
}

// noAttrs is an empty attrs array as the driver takes it.
var noAttrs any = []string{}

// Abort gives the INSERT up without sending it.
func (p *PreparedEvents) Abort() {
	if p != nil {
		_ = p.batch.Abort()
	}
}

// Events is a convenience that inserts events with no Kafka source.
func (s *Sink) Events(ctx context.Context, events []model.Event) error {
	var b schema.EventBatch
	now := time.Now().UnixMilli()
	for i := range events {
		b.Add(&events[i], schema.Source{}, now)
	}
	return s.InsertEvents(ctx, &b)
}

// InsertDeadLetters inserts rejected messages in one INSERT.
func (s *Sink) InsertDeadLetters(ctx context.Context, dls []schema.DeadLetter) error {
	if len(dls) == 0 {
		return nil
	}
	n := len(dls)
	cols := schema.DeadLetterColumnsOf(dls)
	if err := s.send(ctx, schema.DeadLetters, schema.DeadLetterColumns, cols); err != nil {
		return fmt.Errorf("insert %d dead letters into %s.%s: %w", n, s.db, schema.DeadLetters, err)
	}
	return nil
}

func (s *Sink) send(ctx context.Context, table, columns string, parts ...[]any) error {
	batch, err := s.prepare(ctx, table, columns, parts...)
	if err != nil {
		return err
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// prepare starts an INSERT and appends the columns (whole columns at once:
// the driver copies a []string column in one call).
func (s *Sink) prepare(ctx context.Context, table, columns string, parts ...[]any) (_ driver.Batch, err error) {
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.db+"."+table+" ("+columns+")")
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	for _, cols := range parts {
		for i, c := range cols {
			if err := batch.Column(i).Append(c); err != nil {
				_ = batch.Abort()
				return nil, fmt.Errorf("column %d: %w", i, err)
			}
		}
	}
	return batch, nil
}

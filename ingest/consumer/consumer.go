// Package consumer is handoff's ingester: a Kafka consumer group on the
// events topic that decodes and validates each message with model, stores
// valid events in ClickHouse in batches and dead-letters the rest, and
// commits offsets only after ClickHouse (and the dead-letter topic) have
// acknowledged everything up to them.
//
// Delivery is at least once: a crash between the INSERT and the commit
// makes Kafka deliver the same messages again, and ClickHouse collapses the
// repeats because events are keyed by event_id (dead letters by source
// topic/partition/offset). Nothing is committed that is not stored.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/chconn"
	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/ingest/sink"
	"github.com/handoff-dev/handoff/ingest/topics"
	"github.com/handoff-dev/handoff/model"
)

// Headers of dead-letter messages. The value is the original message.
const (
	HeaderReason          = "handoff-reason"           // model.RejectKind, e.g. bad_json
	HeaderError           = "handoff-error"            // the validation error text
	HeaderSourceTopic     = "handoff-source-topic"     // where the message was read
	HeaderSourcePartition = "handoff-source-partition" // decimal
	HeaderSourceOffset    = "handoff-source-offset"    // decimal
	HeaderReceivedMS      = "handoff-received-ms"      // when the ingester rejected it, Unix ms
	HeaderTruncated       = "handoff-truncated"        // "true" when the value was cut to fit the topic
)

// Options are the non-configuration inputs of New.
type Options struct {
	Logger   *slog.Logger          // default: discard
	Registry prometheus.Registerer // where metrics are registered; nil: not registered
	// ClickHouseDial replaces the TCP dialer to ClickHouse (tests route it
	// through a proxy they can cut).
	ClickHouseDial func(ctx context.Context, addr string) (net.Conn, error)
}

// Consumer moves events from Kafka into ClickHouse. Create it with New, run
// it with Run, release it with Close.
type Consumer struct {
	cfg     Config
	log     *slog.Logger
	m       *Metrics
	conn    driver.Conn
	sink    *sink.Sink
	reader  *kafka.Reader
	dlq     *kafka.Writer
	workers int

	// decode state, used by the decode stage only: one decoder per worker
	dec []model.Decoder
	// per-partition lag, used by the store stage only
	lag map[int]int64
}

// New connects to ClickHouse (creating the schema when missing) and Kafka
// (creating the topics when missing) and prepares the consumer group
// reader. While a service is unreachable it retries with backoff until ctx
// is done.
func New(ctx context.Context, cfg Config, opts Options) (*Consumer, error) {
	if err := cfg.Validate(); err != nil { // the database name too
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 10 * time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	c := &Consumer{cfg: cfg, log: log, m: NewMetrics(opts.Registry), lag: map[int]int64{}}
	c.workers = cfg.Workers
	if c.workers <= 0 {
		c.workers = runtime.GOMAXPROCS(0)
	}
	c.dec = make([]model.Decoder, c.workers)

	err := c.retry(ctx, "startup", "connect to ClickHouse "+cfg.ClickHouseAddr+" and ensure the schema", 0, func(ctx context.Context) error {
		conn, err := chconn.Open(ctx, chconn.Config{Addr: cfg.ClickHouseAddr, User: cfg.User, Password: cfg.Password, Compression: cfg.Compression, Dial: opts.ClickHouseDial})
		if err != nil {
			return err
		}
		if err := schema.Ensure(ctx, conn, cfg.Database); err != nil {
			conn.Close()
			return err
		}
		c.conn = conn
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.sink, _ = sink.New(c.conn, cfg.Database)
	err = c.retry(ctx, "startup", "ensure Kafka topics "+cfg.Topic+", "+cfg.DLQTopic, 0, func(ctx context.Context) error {
		return topics.Ensure(ctx, cfg.Brokers,
			topics.Spec{Name: cfg.Topic, Partitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor},
			topics.Spec{Name: cfg.DLQTopic, Partitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor})
	})
	if err != nil {
		c.conn.Close()
		return nil, err
	}
	queue := cfg.BatchSize
	if queue < 1000 {
		queue = 1000
	}
	if queue > 20000 {
		queue = 20000
	}
	c.reader = kafka.NewReader(kafka.ReaderConfig{
		Brokers:               cfg.Brokers,
		GroupID:               cfg.Group,
		Topic:                 cfg.Topic,
		MinBytes:              1,
		MaxBytes:              2 * topics.MaxMessageBytes,
		MaxWait:               3 * time.Second, // long poll; kafka-go keeps 1s of it as a response margin
		QueueCapacity:         queue,
		CommitInterval:        0, // synchronous commits, only from flush
		StartOffset:           kafka.FirstOffset,
		SessionTimeout:        cfg.SessionTimeout,
		HeartbeatInterval:     cfg.SessionTimeout / 4,
		RebalanceTimeout:      cfg.SessionTimeout,
		JoinGroupBackoff:      time.Second,
		ReadBackoffMin:        100 * time.Millisecond,
		ReadBackoffMax:        cfg.RetryMax,
		ReadLagInterval:       -1,
		WatchPartitionChanges: true,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			log.Info("kafka reader: " + fmt.Sprintf(msg, args...))
		}),
	})
	c.dlq = &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Topic:        cfg.DLQTopic,
		Balancer:     &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    1000,
		BatchBytes:   2 * topics.MaxMessageBytes,
		MaxAttempts:  3,
		WriteTimeout: 30 * time.Second,
		ReadTimeout:  30 * time.Second,
	}
	return c, nil
}

// Metrics returns the consumer's metrics.
func (c *Consumer) Metrics() *Metrics { return c.m }

// Close releases the Kafka reader and writer and the ClickHouse connection.
// Call it after Run returned.
func (c *Consumer) Close() error {
	var errs []error
	if c.reader != nil {
		if err := c.reader.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close Kafka reader: %w", err))
		}
	}
	if c.dlq != nil {
		if err := c.dlq.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close DLQ writer: %w", err))
		}
	}
	if c.conn != nil {
		if err := c.conn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close ClickHouse connection: %w", err))
		}
	}
	return errors.Join(errs...)
}

type pending struct {
	msgs    []kafka.Message
	trigger string
}

// decoded is a batch after decoding: events as columns (one EventBatch per
// decode worker) and the dead letters. A few are recycled between the
// decode and store stages.
type decoded struct {
	pending
	// n is the number of messages and last the last message read of every
	// partition in the batch (what to commit, without key and value): the
	// messages themselves are dropped once decoded.
	n               int
	last            []kafka.Message
	evb             []schema.EventBatch
	dead            [][]schema.DeadLetter
	valid, rejected int
	start           time.Time
	decodeTime      time.Duration
}

// Run consumes until ctx is done, then flushes what it holds, commits and
// returns nil. The last flush may take up to the configured shutdown
// timeout; if it cannot finish, Run returns an error and the unstored
// messages stay uncommitted (they are consumed again on the next start).
func (c *Consumer) Run(ctx context.Context) error {
	// Flushes outlive ctx by up to ShutdownTimeout, so a SIGTERM still
	// stores and commits what was read.
	flushCtx, cancelFlush := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelFlush()
	stopAfter := context.AfterFunc(ctx, func() {
		time.AfterFunc(c.cfg.ShutdownTimeout, cancelFlush)
	})
	defer stopAfter()

	c.log.Info("ingest running", "topic", c.cfg.Topic, "group", c.cfg.Group, "brokers", c.cfg.Brokers,
		"clickhouse", c.cfg.ClickHouseAddr, "database", c.cfg.Database, "batch_size", c.cfg.BatchSize,
		"flush_interval", c.cfg.FlushInterval, "decode_workers", c.workers)

	// Three stages after fetching: this loop fetches and cuts batches, the
	// decode stage decodes them, the store stage writes and commits them,
	// in order. Decoding batch n+1 overlaps storing batch n. The loop reads
	// the Kafka reader directly (no goroutine and channel per message in
	// between); the reader's own queue buffers while a hand-over waits.
	batches := make(chan pending, 1)
	// Message slices of decoded batches, cleared, for the next batches.
	spare := make(chan []kafka.Message, 2)
	decodedCh := make(chan *decoded, 1)
	// In use at once: up to coalesce being stored, as many being built
	// into the next INSERT, one handed over, one being decoded.
	free := make(chan *decoded, 2*coalesce+2)
	for i := 0; i < cap(free); i++ {
		free <- &decoded{evb: make([]schema.EventBatch, c.workers), dead: make([][]schema.DeadLetter, c.workers)}
	}
	go c.decodeStage(batches, free, decodedCh, spare)
	flushDone := make(chan error, 1)
	go func() { flushDone <- c.storeStage(flushCtx, decodedCh, free) }()

	cur := make([]kafka.Message, 0, c.cfg.BatchSize)
	// bctx ends FlushInterval after the first message of the current
	// batch (the age trigger); it is ctx while the batch is empty.
	bctx, bcancel := ctx, context.CancelFunc(func() {})
	send := func(trigger string) bool {
		bcancel()
		bctx, bcancel = ctx, func() {}
		if len(cur) == 0 {
			return true
		}
		select {
		case batches <- pending{msgs: cur, trigger: trigger}:
			select {
			case cur = <-spare:
			default:
				cur = make([]kafka.Message, 0, c.cfg.BatchSize)
			}
			return true
		case <-ctx.Done():
			return false
		}
	}
	backoff := 100 * time.Millisecond
loop:
	for {
		m, err := c.reader.FetchMessage(bctx)
		if err != nil {
			if ctx.Err() != nil {
				break loop
			}
			if bctx.Err() != nil { // the batch's age
				if !send("age") {
					break loop
				}
				continue
			}
			c.m.Errors.WithLabelValues("fetch").Inc()
			c.log.Warn("kafka fetch failed; retrying", "topic", c.cfg.Topic, "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-bctx.Done():
			}
			backoff = min(backoff*2, c.cfg.RetryMax)
			continue
		}
		backoff = 100 * time.Millisecond
		if len(cur) == 0 {
			bctx, bcancel = context.WithTimeout(ctx, c.cfg.FlushInterval)
		}
		cur = append(cur, m)
		if len(cur) >= c.cfg.BatchSize && !send("size") {
			break loop
		}
	}
	bcancel()
	if len(cur) > 0 {
		batches <- pending{msgs: cur, trigger: "shutdown"}
	}
	close(batches)
	err := <-flushDone
	if err != nil {
		c.log.Error("ingest stopped with unstored messages; they stay uncommitted and are consumed again on the next start", "err", err)
		return err
	}
	c.log.Info("ingest stopped: flushed and committed")
	return nil
}

// decodeStage decodes batches in order into recycled decoded values.
func (c *Consumer) decodeStage(in <-chan pending, free <-chan *decoded, out chan<- *decoded, spare chan<- []kafka.Message) {
	defer close(out)
	for p := range in {
		d := <-free
		d.pending = p
		d.start = time.Now()
		d.valid, d.rejected = c.decode(d, d.start.UnixMilli())
		d.n = len(p.msgs)
		d.last = lastOffsets(d.last[:0], p.msgs)
		// The events own copies of their strings and dead letters keep
		// their payload: the messages are not needed any more.
		clear(p.msgs)
		select {
		case spare <- p.msgs[:0]:
		default:
		}
		d.msgs = nil
		d.decodeTime = time.Since(d.start)
		out <- d
	}
}

// lastOffsets appends to dst the message of the highest offset of every
// partition in msgs, without key, value and headers.
func lastOffsets(dst []kafka.Message, msgs []kafka.Message) []kafka.Message {
	for i := range msgs {
		m := &msgs[i]
		k := -1
		for j := range dst {
			if dst[j].Partition == m.Partition {
				k = j
				break
			}
		}
		if k < 0 {
			dst = append(dst, kafka.Message{})
			k = len(dst) - 1
		} else if dst[k].Offset >= m.Offset {
			continue
		}
		dst[k] = kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, HighWaterMark: m.HighWaterMark}
	}
	return dst
}

// coalesce is how many decoded batches at most one INSERT carries. When
// the store stage falls behind (ClickHouse is the slower side), the
// batches decoded meanwhile go into one INSERT: every INSERT makes a new
// part per month it touches (~60 files), and creating parts is a large
// share of ClickHouse's CPU per row; under light load each batch is still
// stored on its own, as soon as it is decoded.
const coalesce = 2

// storeStage stores and commits batches in order, a group of up to
// coalesce batches that are ready at once per INSERT. It runs in two
// steps: one goroutine builds the next group's INSERT block (the driver's
// copy of the columns) while this one sends the previous group, waits for
// ClickHouse and commits, so only sending and committing are serial. After
// a failure (only possible when ctx ends) it stores nothing more and
// commits nothing more, so no later commit can cover an unstored message.
func (c *Consumer) storeStage(ctx context.Context, in <-chan *decoded, free chan<- *decoded) error {
	type built struct {
		group []*decoded
		ins   *sink.PreparedEvents // nil: nothing prepared (no events, or prepare failed)
		// cancel ends the prepared INSERT's context after it was sent or
		// aborted.
		cancel context.CancelFunc
	}
	ready := make(chan built) // unbuffered: at most one built group waits
	stopBuilding := make(chan struct{})
	go func() {
		defer close(ready)
		for d := range in {
			group := []*decoded{d}
		more:
			for len(group) < coalesce {
				select {
				case d, ok := <-in:
					if !ok {
						break more
					}
					group = append(group, d)
				default:
					break more
				}
			}
			b := built{group: group, cancel: func() {}}
			select {
			case <-stopBuilding:
			default:
				// A failed prepare is not an error here: store retries the
				// whole INSERT.
				pctx, cancel := context.WithTimeout(ctx, time.Minute)
				ins, err := c.sink.PrepareEvents(pctx, eventBatches(group)...)
				if err != nil || ins == nil {
					if err != nil {
						c.log.Debug("building the next INSERT failed; it is retried when stored", "err", err)
					}
					cancel()
				} else {
					b.ins, b.cancel = ins, cancel
				}
			}
			ready <- b
		}
	}()
	var failed error
	for b := range ready {
		if failed == nil {
			if err := c.store(ctx, b.group, b.ins); err != nil {
				failed = err
				close(stopBuilding)
			}
		} else {
			b.ins.Abort()
		}
		b.cancel()
		for _, d := range b.group {
			d.msgs = nil
			free <- d
		}
	}
	return failed
}

func eventBatches(group []*decoded) []*schema.EventBatch {
	var bs []*schema.EventBatch
	for _, d := range group {
		for i := range d.evb {
			bs = append(bs, &d.evb[i])
		}
	}
	return bs
}

// store writes the dead letters and then the events of a group of batches,
// then commits the highest offset of every partition in them. ins, when
// not nil, is the group's events INSERT already built: the first attempt
// sends it (store sends or aborts it), retries build it again.
func (c *Consumer) store(ctx context.Context, group []*decoded, ins *sink.PreparedEvents) error {
	defer func() { ins.Abort() }() // after Send: a no-op
	start := time.Now()
	var n, valid, rejected int
	for _, d := range group {
		c.m.Flushes.WithLabelValues(d.trigger).Inc()
		n += d.n
		valid += d.valid
		rejected += d.rejected
	}

	if rejected > 0 {
		var dead []schema.DeadLetter
		for _, d := range group {
			for _, dl := range d.dead {
				dead = append(dead, dl...)
			}
		}
		if err := c.retry(ctx, "dlq_write", fmt.Sprintf("write %d dead letters to Kafka topic %s", len(dead), c.cfg.DLQTopic), 0,
			func(ctx context.Context) error { return c.writeDLQ(ctx, dead) }); err != nil {
			return err
		}
		if err := c.retry(ctx, "dead_letter_insert", fmt.Sprintf("insert %d dead letters into ClickHouse", len(dead)), 0,
			func(ctx context.Context) error { return c.sink.InsertDeadLetters(ctx, dead) }); err != nil {
			return err
		}
		for _, d := range dead {
			c.m.Rejected.WithLabelValues(string(d.Reason)).Inc()
		}
	}
	if valid > 0 {
		bs := eventBatches(group)
		if err := c.retry(ctx, "insert", fmt.Sprintf("insert %d events into ClickHouse %s", valid, c.cfg.ClickHouseAddr), 0,
			func(ctx context.Context) error {
				t := time.Now()
				var err error
				if ins != nil {
					err = ins.Send()
					ins = nil
				} else {
					err = c.sink.InsertEvents(ctx, bs...)
				}
				if err != nil {
					return err
				}
				c.m.InsertTime.Observe(time.Since(t).Seconds())
				return nil
			}); err != nil {
			return err
		}
		c.m.Inserted.Add(float64(valid))
	}
	c.m.Consumed.Add(float64(n))
	stored := time.Since(start)

	// Commit the highest offset of every partition in the group.
	var commits []kafka.Message
	for _, d := range group {
		commits = lastOffsets(commits, d.last)
	}
	err := c.retry(ctx, "commit", fmt.Sprintf("commit offsets of %d messages (group %s)", n, c.cfg.Group), 8,
		func(ctx context.Context) error { return c.reader.CommitMessages(ctx, commits...) })
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// Stored but not committed: harmless, the messages come again and
		// are deduplicated. A later commit covers them.
		c.log.Error("offsets not committed; the stored messages will be consumed again and deduplicated", "err", err)
	} else {
		c.m.Committed.Add(float64(n))
		c.m.LastCommitTS.SetToCurrentTime()
		var total int64
		for _, m := range commits {
			c.lag[m.Partition] = max(0, m.HighWaterMark-m.Offset-1)
		}
		for _, l := range c.lag {
			total += l
		}
		c.m.Lag.Set(float64(total))
	}
	var decodeTime time.Duration
	for _, d := range group {
		decodeTime += d.decodeTime
	}
	first := group[0]
	c.log.Debug("flushed", "trigger", first.trigger, "batches", len(group), "messages", n, "events", valid, "rejected", rejected,
		"decode", decodeTime, "waited", start.Sub(first.start.Add(first.decodeTime)), "stored", stored, "total", time.Since(start))
	return nil
}

// decode decodes d.msgs with the parallel workers into d.evb and d.dead.
func (c *Consumer) decode(d *decoded, nowMS int64) (valid, rejected int) {
	msgs := d.msgs
	w := c.workers
	if len(msgs) < 2000 {
		w = 1
	}
	for i := range d.evb {
		d.evb[i].Reset()
		d.dead[i] = d.dead[i][:0]
	}
	chunk := (len(msgs) + w - 1) / w
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		lo := i * chunk
		hi := min(lo+chunk, len(msgs))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(i int, part []kafka.Message) {
			defer wg.Done()
			dec := &c.dec[i]
			eb := &d.evb[i]
			for j := range part {
				m := &part[j]
				src := schema.Source{Topic: m.Topic, Partition: int32(m.Partition), Offset: m.Offset}
				e, err := dec.Decode(m.Value)
				if err == nil {
					eb.Add(&e, src, nowMS)
					continue
				}
				kind := model.RejectBadJSON
				var ve *model.ValidationError
				if errors.As(err, &ve) && ve.Kind != "" {
					kind = ve.Kind
				}
				d.dead[i] = append(d.dead[i], schema.DeadLetter{
					ReceivedMS: nowMS, Source: src, Key: string(m.Key), Reason: kind, Error: err.Error(), Payload: m.Value,
				})
			}
		}(i, msgs[lo:hi])
	}
	wg.Wait()
	for i := range d.evb {
		valid += d.evb[i].Len()
		rejected += len(d.dead[i])
	}
	return valid, rejected
}

func (c *Consumer) writeDLQ(ctx context.Context, dead []schema.DeadLetter) error {
	out := make([]kafka.Message, len(dead))
	for i, d := range dead {
		value := d.Payload
		hdr := []kafka.Header{
			{Key: HeaderReason, Value: []byte(d.Reason)},
			{Key: HeaderError, Value: []byte(d.Error)},
			{Key: HeaderSourceTopic, Value: []byte(d.Source.Topic)},
			{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(int(d.Source.Partition)))},
			{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(d.Source.Offset, 10))},
			{Key: HeaderReceivedMS, Value: []byte(strconv.FormatInt(d.ReceivedMS, 10))},
		}
		if limit := topics.MaxMessageBytes - 64<<10; len(value) > limit {
			value = value[:limit]
			hdr = append(hdr, kafka.Header{Key: HeaderTruncated, Value: []byte("true")})
		}
		var key []byte
		if d.Key != "" {
			key = []byte(d.Key)
		}
		out[i] = kafka.Message{Key: key, Value: value, Headers: hdr}
	}
	if err := c.dlq.WriteMessages(ctx, out...); err != nil {
		return fmt.Errorf("kafka topic %s: %w", c.cfg.DLQTopic, err)
	}
	return nil
}

// retry runs fn until it succeeds, ctx is done, or (when attempts > 0)
// after that many attempts, waiting with capped exponential backoff in
// between. Each attempt gets at most a minute.
func (c *Consumer) retry(ctx context.Context, stage, what string, attempts int, fn func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		err := fn(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				c.log.Info("recovered", "stage", stage, "what", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: stopped before it succeeded: %w", what, err)
		}
		if stage != "startup" {
			c.m.Errors.WithLabelValues(stage).Inc()
		}
		if attempts > 0 && attempt >= attempts {
			return fmt.Errorf("%s: failed %d times: %w", what, attempt, err)
		}
		c.log.Warn("failed; retrying", "stage", stage, "what", what, "attempt", attempt, "err", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("%s: stopped before it succeeded: %w", what, err)
		}
		backoff = min(backoff*2, c.cfg.RetryMax)
	}
}

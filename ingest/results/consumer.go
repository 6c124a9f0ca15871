// Package results stores what the analyzer publishes: findings (from
// `handoff detect`, topic handoff.findings) and diagnoses (from `handoff
// backfill`, topic handoff.diagnoses). ingest stays the only writer to
// ClickHouse, so the analyzer's commands publish to Kafka and this consumer,
// run by `handoff ingest`, writes the findings_v2 and diagnoses_v2 tables.
//
// It has its own consumer group on both topics. Each record is decoded and
// validated (ParseFinding, ParseDiagnosis); a bad one takes the events'
// dead-letter path (the dead-letter topic with the reason in headers, and a
// dead_letters row). Records are stored in batches cut by count, bytes or
// age, with PrepareBatch and a column list, and offsets are committed only
// after ClickHouse acknowledged: at least once, and a record delivered
// twice collapses in the ReplacingMergeTree tables.
package results

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/internal/retry"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// Options are the non-configuration inputs of New.
type Options struct {
	// Conn is the ClickHouse connection, with the schema ensured
	// (schema.Ensure). Close does not close it.
	Conn     chconn.Conn
	Logger   *slog.Logger          // default: discard
	Registry prometheus.Registerer // where metrics are registered; nil: not registered
}

// Consumer moves findings and diagnoses from Kafka into ClickHouse. Create
// it with New, run it with Run, release it with Close.
type Consumer struct {
	cfg    Config
	log    *slog.Logger
	m      *Metrics
	sink   *writer.Sink
	reader *kafka.Reader
	dlq    *kafka.Writer
	lag    *topics.Lag
	// clientID names this member in the group (its reader's Kafka client
	// ID), so that its partitions can be found in the group's description
	// after a rebalance (the reader does not tell them).
	clientID string
	// offsets reads the group's committed offsets before a commit, on a
	// connection pool of its own (closed by Close).
	offsets   *kafka.Client
	offsetsTr *kafka.Transport

	// beforeCommit, when set (tests), runs after a batch is stored and
	// before its offsets are committed; an error stops Run there, as a
	// crash would.
	beforeCommit func() error
}

// New prepares the consumer: it checks the configuration, creates the
// topics when missing (retrying with backoff until ctx is done while Kafka
// is unreachable) and the consumer group reader.
func New(ctx context.Context, cfg Config, opts Options) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Conn == nil {
		return nil, errors.New("results: no ClickHouse connection given (Options.Conn)")
	}
	s, err := writer.New(opts.Conn, cfg.Database)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Consumer{cfg: cfg, log: log, m: NewMetrics(opts.Registry, cfg.topics()), sink: s, clientID: memberClientID()}
	c.lag = topics.NewLag(func(topic string, n int64) { c.m.Lag.WithLabelValues(topic).Set(float64(n)) }, cfg.topics()...)
	specs := []topics.Spec{{Name: cfg.DLQTopic, Partitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor}}
	for _, t := range cfg.topics() {
		specs = append(specs, topics.Spec{Name: t, Partitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor})
	}
	if err := c.retry(ctx, retry.Startup, fmt.Sprintf("ensure Kafka topics %v and %s", cfg.topics(), cfg.DLQTopic), 0,
		func(ctx context.Context) error { return topics.Ensure(ctx, cfg.Brokers, specs...) }); err != nil {
		return nil, err
	}
	c.reader = kafka.NewReader(kafka.ReaderConfig{
		Brokers:           cfg.Brokers,
		GroupID:           cfg.Group,
		GroupTopics:       cfg.topics(),
		Dialer:            &kafka.Dialer{ClientID: c.clientID, Timeout: 10 * time.Second, DualStack: true},
		MinBytes:          1,
		MaxBytes:          2 * topics.MaxMessageBytes,
		MaxWait:           3 * time.Second,
		CommitInterval:    0, // synchronous commits, only after a batch is stored
		StartOffset:       kafka.FirstOffset,
		SessionTimeout:    cfg.SessionTimeout,
		HeartbeatInterval: cfg.SessionTimeout / 4,
		RebalanceTimeout:  cfg.SessionTimeout,
		JoinGroupBackoff:  time.Second,
		ReadBackoffMin:    100 * time.Millisecond,
		ReadBackoffMax:    cfg.RetryMax,
		ReadLagInterval:   -1,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			log.Info("kafka results reader: " + fmt.Sprintf(msg, args...))
		}),
	})
	c.dlq = &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Topic:        cfg.DLQTopic,
		Balancer:     &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		BatchBytes:   2 * topics.MaxMessageBytes,
		MaxAttempts:  3,
		WriteTimeout: 30 * time.Second,
		ReadTimeout:  30 * time.Second,
	}
	c.offsetsTr = &kafka.Transport{}
	c.offsets = &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 30 * time.Second, Transport: c.offsetsTr}
	return c, nil
}

// Metrics returns the consumer's metrics.
func (c *Consumer) Metrics() *Metrics { return c.m }

// Close releases the Kafka reader and writer (not the ClickHouse
// connection, which the caller owns). Call it after Run returned.
func (c *Consumer) Close() error {
	var errs []error
	if err := c.reader.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close results reader: %w", err))
	}
	if err := c.dlq.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close results DLQ writer: %w", err))
	}
	c.offsetsTr.CloseIdleConnections()
	return errors.Join(errs...)
}

// batch is the records read since the last flush, decoded into rows.
type batch struct {
	findings  schema.FindingRows
	diagnoses schema.DiagnosisRows
	dead      []schema.DeadLetter
	// last is the last message read of every partition (what to commit).
	last           []kafka.Message
	n, bytes       int
	storedPerTopic map[string]int
}

func newBatch() *batch { return &batch{storedPerTopic: map[string]int{}} }

// Run consumes until ctx is done, then stores what it holds, commits and
// returns nil. The last flush may take up to the shutdown timeout; if it
// cannot finish, Run returns an error and the unstored records stay
// uncommitted (they are read again on the next start).
func (c *Consumer) Run(ctx context.Context) error {
	flushCtx, cancelFlush := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelFlush()
	stopAfter := context.AfterFunc(ctx, func() { time.AfterFunc(c.cfg.ShutdownTimeout, cancelFlush) })
	defer stopAfter()
	c.log.Info("results ingest running", "topics", c.cfg.topics(), "group", c.cfg.Group, "database", c.cfg.Database)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); c.watchAssignment(watchCtx, assignmentCheck) }()
	defer func() { stopWatch(); <-watched }()

	b := newBatch()
	// age.ctx ends FlushInterval after the batch's first record (the age
	// trigger); it is ctx while the batch is empty.
	age := struct {
		ctx    context.Context
		cancel context.CancelFunc
	}{ctx, func() {}}
	defer func() { age.cancel() }()
	flush := func(trigger string) error {
		age.cancel()
		age.ctx, age.cancel = ctx, func() {}
		if b.n == 0 {
			return nil
		}
		err := c.store(flushCtx, b, trigger)
		b = newBatch()
		return err
	}
	backoff := 100 * time.Millisecond
	for {
		m, err := c.reader.FetchMessage(age.ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if age.ctx.Err() != nil { // the batch's age
				if err := flush("age"); err != nil {
					return err
				}
				continue
			}
			c.m.Errors.WithLabelValues("fetch").Inc()
			c.log.Warn("kafka fetch of findings/diagnoses failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-age.ctx.Done():
			}
			backoff = min(backoff*2, c.cfg.RetryMax)
			continue
		}
		backoff = 100 * time.Millisecond
		if b.n == 0 {
			age.ctx, age.cancel = context.WithTimeout(ctx, c.cfg.FlushInterval)
		}
		c.add(b, &m, time.Now().UnixMilli())
		switch {
		case b.n >= c.cfg.BatchSize:
			err = flush("size")
		case b.bytes >= c.cfg.BatchBytes:
			err = flush("bytes")
		}
		if err != nil {
			return err
		}
	}
	if err := flush("shutdown"); err != nil {
		c.log.Error("results ingest stopped with unstored records; they stay uncommitted and are read again on the next start", "err", err)
		return err
	}
	c.log.Info("results ingest stopped: stored and committed")
	return nil
}

// add decodes one message into the batch, as a row or a dead letter.
func (c *Consumer) add(b *batch, m *kafka.Message, nowMS int64) {
	c.m.Read.WithLabelValues(m.Topic).Inc()
	b.n++
	b.bytes += len(m.Key) + len(m.Value)
	b.last = lastOffsets(b.last, m)
	c.lag.Fetched(m.Topic, m.Partition, m.Offset, m.HighWaterMark)

	src := schema.Source{Topic: m.Topic, Partition: int32(m.Partition), Offset: m.Offset}
	var err error
	switch m.Topic {
	case c.cfg.FindingsTopic:
		var f schema.FindingRow
		if f, err = ParseFinding(m.Value); err == nil {
			f.EventsPartition, f.EventsPartitions = eventsPartition(m.Headers)
			b.findings.Add(f, src, nowMS)
		}
	case c.cfg.DiagnosesTopic:
		var d Diagnosis
		if d, err = ParseDiagnosis(m.Value); err == nil {
			b.diagnoses.Add(d.row(), src, nowMS)
		}
	default:
		err = &model.ValidationError{Reason: "read from unexpected topic " + m.Topic, Kind: model.RejectBadValue}
	}
	if err == nil {
		b.storedPerTopic[m.Topic]++
		return
	}
	kind := model.RejectBadJSON
	var ve *model.ValidationError
	if errors.As(err, &ve) && ve.Kind != "" {
		kind = ve.Kind
	}
	b.dead = append(b.dead, schema.DeadLetter{ReceivedMS: nowMS, Source: src, Key: string(m.Key), Reason: kind, Error: err.Error(), Payload: m.Value})
}

// eventsPartition is the events partition a finding record's header
// names (schema.EventsPartitionHeader), 0 of 0 when it has none or one
// that does not parse: the record is stored all the same, its partition
// not known (a takeover then reads it and tells by the batch key).
func eventsPartition(hs []kafka.Header) (p, n int32) {
	for i := range hs {
		if hs[i].Key == schema.EventsPartitionHeader {
			if p, n, ok := schema.ParseEventsPartition(hs[i].Value); ok {
				return p, n
			}
			return 0, 0
		}
	}
	return 0, 0
}

// lastOffsets keeps in dst the message of the highest offset of every
// topic partition, without key, value and headers.
func lastOffsets(dst []kafka.Message, m *kafka.Message) []kafka.Message {
	for i := range dst {
		if dst[i].Topic == m.Topic && dst[i].Partition == m.Partition {
			if m.Offset > dst[i].Offset {
				dst[i].Offset, dst[i].HighWaterMark = m.Offset, m.HighWaterMark
			}
			return dst
		}
	}
	return append(dst, kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, HighWaterMark: m.HighWaterMark})
}

// store writes the batch's dead letters (topic, then table), findings and
// diagnoses, then commits. Each step is retried until it succeeds or ctx
// ends; a record is committed only after all of it was acknowledged.
func (c *Consumer) store(ctx context.Context, b *batch, trigger string) error {
	start := time.Now()
	c.m.Flushes.WithLabelValues(trigger).Inc()
	if len(b.dead) > 0 {
		msgs := deadletter.Messages(b.dead)
		if err := c.retry(ctx, "dlq_write", fmt.Sprintf("write %d dead letters to Kafka topic %s", len(b.dead), c.cfg.DLQTopic), 0,
			func(ctx context.Context) error { return c.dlq.WriteMessages(ctx, msgs...) }); err != nil {
			return err
		}
		if err := c.retry(ctx, "dead_letter_insert", fmt.Sprintf("insert %d dead letters into ClickHouse", len(b.dead)), 0,
			func(ctx context.Context) error { return c.sink.InsertDeadLetters(ctx, b.dead) }); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		table, columns string
		n              int
		cols           func() []any
	}{
		{schema.Findings, schema.FindingColumns, b.findings.Len(), b.findings.Columns},
		{schema.Diagnoses, schema.DiagnosisColumns, b.diagnoses.Len(), b.diagnoses.Columns},
	} {
		if t.n == 0 {
			continue
		}
		cols := t.cols()
		if err := c.retry(ctx, "insert", fmt.Sprintf("insert %d rows into %s", t.n, t.table), 0,
			func(ctx context.Context) error { return c.sink.InsertColumns(ctx, t.table, t.columns, cols) }); err != nil {
			return err
		}
	}
	for _, d := range b.dead {
		c.m.Rejected.WithLabelValues(d.Source.Topic, string(d.Reason)).Inc()
	}
	for topic, n := range b.storedPerTopic {
		c.m.Stored.WithLabelValues(topic).Add(float64(n))
	}
	if c.beforeCommit != nil {
		if err := c.beforeCommit(); err != nil {
			return err
		}
	}
	err := c.retry(ctx, "commit", fmt.Sprintf("commit offsets of %d records (group %s)", b.n, c.cfg.Group), 8,
		func(ctx context.Context) error {
			return topics.CommitForward(ctx, c.reader, c.offsets, c.cfg.Group, b.last, c.log)
		})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// Stored but not committed: the records come again and collapse;
		// a later commit covers them.
		c.log.Error("results offsets not committed; the stored records will be read again and collapse", "err", err)
	} else {
		c.m.LastCommitTS.SetToCurrentTime()
		c.lag.Committed(b.last)
	}
	c.log.Debug("results flushed", "trigger", trigger, "records", b.n, "bytes", b.bytes, "findings", b.findings.Len(),
		"diagnoses", b.diagnoses.Len(), "rejected", len(b.dead), "took", time.Since(start))
	return nil
}

// assignmentCheck is how often the consumer asks its reader whether the
// group rebalanced.
const assignmentCheck = 2 * time.Second

// watchAssignment keeps the lag gauge to this member's partitions: after
// each rebalance its reader counts, it asks the group coordinator which
// partitions are this member's (by its client ID), again on the next
// check while the group is still rebalancing, until ctx ends.
func (c *Consumer) watchAssignment(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.reader.Stats().Rebalances > 0 {
			pending = true
		}
		if !pending {
			continue
		}
		owned, err := c.assignment(ctx)
		if err != nil {
			c.log.Debug("results ingest: reading the group's assignment failed; trying again", "group", c.cfg.Group, "err", err)
			continue
		}
		if owned != nil {
			c.lag.Assign(owned)
			pending = false
		}
	}
}

// assignment returns the partitions this member owns by topic, or nil
// while the group is not stable or the member not in it yet.
func (c *Consumer) assignment(ctx context.Context) (map[string][]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.offsets.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{c.cfg.Group}})
	if err != nil {
		return nil, fmt.Errorf("describe consumer group %s: %w", c.cfg.Group, err)
	}
	for _, g := range resp.Groups {
		if g.Error != nil {
			return nil, fmt.Errorf("describe consumer group %s: %w", c.cfg.Group, g.Error)
		}
		if g.GroupID != c.cfg.Group || g.GroupState != "Stable" {
			continue
		}
		for _, m := range g.Members {
			if m.ClientID != c.clientID {
				continue
			}
			owned := map[string][]int{}
			for _, t := range m.MemberAssignments.Topics {
				owned[t.Topic] = t.Partitions
			}
			return owned, nil
		}
	}
	return nil, nil
}

// memberClientID is a Kafka client ID of its own for each consumer, so
// that the group's description tells its members apart.
func memberClientID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "handoff-results-" + hex.EncodeToString(b[:])
}

func (c *Consumer) retry(ctx context.Context, stage, what string, attempts int, fn func(context.Context) error) error {
	return retry.Retrier{Log: c.log, Errors: c.m.Errors, Max: c.cfg.RetryMax}.Do(ctx, stage, what, attempts, fn)
}

// Package notify is `handoff notify`: it consumes the findings topic
// (handoff.findings, published by `handoff detect`) and delivers every
// finding where on-call already looks: as alerts to each configured
// Prometheus Alertmanager (v2 API, POST /api/v2/alerts) and as signed JSON
// to each configured webhook.
//
// Delivery is at least once and in topic order, so in order per batch (the
// findings topic is keyed by batch). Records are handled one at a time:
// sent to every receiver at once, each retried with capped backoff for
// RetryFor, after which that receiver's failure becomes a record on the
// dead-letter topic with the reason; only then is the offset committed.
// So nothing is committed past a finding that was neither delivered nor
// dead-lettered, and an endpoint that is down for less than RetryFor loses
// nothing.
//
// Alertmanager forgets an alert whose endsAt passed, so an open finding is
// sent with endsAt = now + Lease and sent again every Resend. notify keeps
// the open findings in memory; on start it rebuilds them by reading the
// topic from the start of its retention up to the group's committed
// offsets (the records it had delivered), then sends them again: the same
// labels and the same startsAt (the finding's raised_at) are the same alert
// in Alertmanager, so a restart raises no duplicate.
//
// Calm alerting: on the first start of a group (no committed offset),
// findings raised more than Since before that start are recorded as seen
// and delivered to no receiver, and the decision is kept on the state
// topic so every later start makes the same; and a finding pages (its
// alert reaches Alertmanager) only once it has been open for its hold (the
// contract's for, else the hold of its severity), measured on the clock
// from raised_at, so a restart in the middle of a hold neither loses nor
// repeats the page.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/ingest/deadletter"
	"github.com/handoff-dev/handoff/internal/retry"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// RejectUndeliverable is the dead-letter reason of a finding a receiver did
// not take after the last retry (the error header names the receiver and
// its last answer).
const RejectUndeliverable model.RejectKind = "undeliverable"

// Options are the non-configuration inputs of New.
type Options struct {
	Logger   *slog.Logger          // default: discard
	Registry prometheus.Registerer // nil: metrics not registered
	// Now is the clock of the alerts' endsAt, of the holds and of the
	// first start's window; default time.Now.
	Now func() time.Time
	// After is the timer of the holds, on the same clock as Now; default
	// time.After.
	After func(time.Duration) <-chan time.Time
}

// Notifier consumes findings and delivers them. Create it with New, run it
// with Run, release it with Close.
type Notifier struct {
	cfg    Config
	log    *slog.Logger
	m      *Metrics
	now    func() time.Time
	after  func(time.Duration) <-chan time.Time
	http   *http.Client
	reader *kafka.Reader
	dlq    *kafka.Writer
	state  *kafka.Writer
	set    *openSet
	lag    map[int]int64 // per partition: high watermark - next offset
	// amLocks serialise the requests to each Alertmanager: a re-send
	// takes its snapshot of the open set and posts it under the lock, and
	// so does each attempt to deliver a record, so a re-send that still
	// saw a finding open can never reach Alertmanager after the record
	// that resolved it (which would fire it again for a lease).
	amLocks map[string]*sync.Mutex
	ready   chan struct{}
	// wake tells the resend loop that a finding started its hold, so it
	// arms the hold timer anew.
	wake chan struct{}
	// backlog is, on the group's first start, the end offset per
	// partition of what was in the topic then; once consumed, a line says
	// how many records were skipped. nil otherwise.
	backlog                  map[int]int64
	skippedN, deliveredFirst int
}

// New checks the configuration, creates the findings and dead-letter topics
// when missing (retrying while Kafka is unreachable, until ctx ends) and
// prepares the consumer group reader.
func New(ctx context.Context, cfg Config, opts Options) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Notifier{
		cfg: cfg, log: opts.Logger, now: opts.Now, m: NewMetrics(opts.Registry),
		http: &http.Client{Timeout: cfg.RequestTimeout, CheckRedirect: noRedirects}, set: newOpenSet(), lag: map[int]int64{},
		amLocks: map[string]*sync.Mutex{}, ready: make(chan struct{}), wake: make(chan struct{}, 1), after: opts.After,
	}
	n.set.hold = cfg.holdOf
	for _, u := range cfg.AlertmanagerURLs {
		n.amLocks[u] = &sync.Mutex{}
	}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	if n.now == nil {
		n.now = time.Now
	}
	if n.after == nil {
		n.after = time.After
	}
	specs := []topics.Spec{
		{Name: cfg.FindingsTopic, Partitions: cfg.Kafka.Partitions, ReplicationFactor: cfg.Kafka.Replication},
		{Name: cfg.DLQTopic, Partitions: cfg.Kafka.Partitions, ReplicationFactor: cfg.Kafka.Replication},
		{Name: cfg.StateTopic, Partitions: 1, ReplicationFactor: cfg.Kafka.Replication, Compact: true},
	}
	if err := n.retrier().Do(ctx, retry.Startup, fmt.Sprintf("ensure Kafka topics %s, %s and %s", cfg.FindingsTopic, cfg.DLQTopic, cfg.StateTopic), 0,
		func(ctx context.Context) error { return topics.Ensure(ctx, cfg.Kafka.Brokers, specs...) }); err != nil {
		return nil, err
	}
	n.reader = kafka.NewReader(kafka.ReaderConfig{
		Brokers:          cfg.Kafka.Brokers,
		GroupID:          cfg.Group,
		GroupTopics:      []string{cfg.FindingsTopic},
		MinBytes:         1,
		MaxBytes:         2 * topics.MaxMessageBytes,
		MaxWait:          time.Second,
		CommitInterval:   0, // synchronous: a record is committed after it was delivered
		StartOffset:      kafka.FirstOffset,
		JoinGroupBackoff: time.Second,
		ReadBackoffMin:   100 * time.Millisecond,
		ReadBackoffMax:   cfg.RetryMax,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			n.log.Info("kafka findings reader: " + fmt.Sprintf(msg, args...))
		}),
	})
	n.dlq = &kafka.Writer{
		Addr:         kafka.TCP(cfg.Kafka.Brokers...),
		Topic:        cfg.DLQTopic,
		Balancer:     &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		MaxAttempts:  3,
		WriteTimeout: 30 * time.Second,
	}
	n.state = &kafka.Writer{
		Addr: kafka.TCP(cfg.Kafka.Brokers...), Topic: cfg.StateTopic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, MaxAttempts: 3, WriteTimeout: 30 * time.Second,
	}
	return n, nil
}

// Metrics returns the notifier's metrics.
func (n *Notifier) Metrics() *Metrics { return n.m }

// Close releases the Kafka reader and writer. Call it after Run returned.
func (n *Notifier) Close() error {
	return errors.Join(n.reader.Close(), n.dlq.Close(), n.state.Close())
}

func (n *Notifier) retrier() retry.Retrier {
	return retry.Retrier{Log: n.log, Max: n.cfg.RetryMax}
}

// Ready is closed once Run has rebuilt the open findings from the topic
// and starts delivering.
func (n *Notifier) Ready() <-chan struct{} { return n.ready }

// Run rebuilds the open findings from the records already delivered, sends
// their alerts again, then consumes and delivers until ctx is done. It
// returns nil on a clean stop; the record being delivered at that moment
// stays uncommitted and is delivered again on the next start.
func (n *Notifier) Run(ctx context.Context) error {
	if err := n.rebuild(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	close(n.ready)
	n.log.Info("notify running", "topic", n.cfg.FindingsTopic, "group", n.cfg.Group, "open", n.set.len(), "blocked", n.set.blockedLen(),
		"alertmanagers", n.cfg.AlertmanagerURLs, "webhooks", len(n.cfg.WebhookURLs))
	// The loop runs without Alertmanagers too: a round then renews nothing
	// and succeeds, so handoff_notify_last_resend_timestamp_seconds stays
	// current and the HandoffAlertsNotRenewed rule stays quiet.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); n.resendLoop(ctx) }()
	err := n.consume(ctx)
	wg.Wait()
	n.log.Info("notify stopped", "open", n.set.len())
	return err
}

// resendLoop sends every open alert to every Alertmanager at once and then
// every Resend, so that no open alert outlives its lease while notify runs,
// and when the earliest hold runs out (a timer on the clock of Options), so
// that a held finding pages at its due time, not up to Resend later.
func (n *Notifier) resendLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.Resend)
	defer t.Stop()
	for {
		n.resend(ctx)
	arm:
		for {
			var due <-chan time.Time
			if next, ok := n.set.nextDue(n.now()); ok {
				due = n.after(next.Sub(n.now()))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				break arm
			case <-due:
				break arm
			case <-n.wake:
			}
		}
	}
}

// woken tells the resend loop to arm the hold timer anew.
func (n *Notifier) woken() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// gauges sets the open and held gauges as of now.
func (n *Notifier) gauges(now time.Time) {
	open, held := n.set.counts(now)
	n.m.Open.Set(float64(open - held))
	n.m.Held.Set(float64(held))
}

func (n *Notifier) resend(ctx context.Context) {
	ok := true
	for _, u := range n.cfg.AlertmanagerURLs {
		if err := n.resendTo(ctx, u); err != nil {
			ok = false
			if ctx.Err() == nil {
				n.m.Errors.WithLabelValues("alertmanager", u).Inc()
				n.log.Warn("re-sending open alerts failed; next round in the resend interval", "alertmanager", u, "err", err)
			}
		}
	}
	if ok {
		n.m.LastResendTS.SetToCurrentTime()
	}
}

// resendTo sends every open alert to Alertmanager u, the snapshot taken
// under u's lock (see amLocks).
func (n *Notifier) resendTo(ctx context.Context, u string) error {
	mu := n.amLocks[u]
	mu.Lock()
	defer mu.Unlock()
	now := n.now()
	alerts := n.set.firing(n.cfg.ServeURL, now, n.cfg.Lease)
	n.gauges(now)
	if len(alerts) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, n.cfg.Resend)
	defer cancel()
	return postAlerts(rctx, n.http, u, alerts)
}

// consume reads, delivers and commits one record at a time.
func (n *Notifier) consume(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		m, err := n.reader.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			n.log.Warn("kafka fetch of findings failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			backoff = min(backoff*2, n.cfg.RetryMax)
			continue
		}
		backoff = 100 * time.Millisecond
		n.m.Consumed.Inc()
		n.lag[m.Partition] = m.HighWaterMark - m.Offset
		n.m.Lag.Set(float64(n.sumLag()))
		if err := n.handle(ctx, &m); err != nil {
			if ctx.Err() != nil {
				n.log.Info("stopped while delivering; the record stays uncommitted and is delivered again on the next start",
					"partition", m.Partition, "offset", m.Offset)
				return nil
			}
			return err
		}
		err = n.retrier().Do(ctx, "commit", fmt.Sprintf("commit offset %d of %s[%d] (group %s)", m.Offset, m.Topic, m.Partition, n.cfg.Group), 0,
			func(ctx context.Context) error { return n.reader.CommitMessages(ctx, m) })
		if err != nil {
			return nil // only ctx ends an unlimited retry: the record comes again and is not news then
		}
		n.lag[m.Partition] = m.HighWaterMark - m.Offset - 1
		n.m.Lag.Set(float64(n.sumLag()))
		n.m.LastCommitTS.SetToCurrentTime()
		n.caughtUp(m.Partition, m.Offset)
	}
}

// caughtUp notes that offset of partition p is committed and, on the
// group's first start, says once how many records of the backlog were
// skipped when the whole backlog is.
func (n *Notifier) caughtUp(p int, offset int64) {
	if n.backlog == nil {
		return
	}
	if end, ok := n.backlog[p]; ok && offset >= end-1 {
		delete(n.backlog, p)
	}
	if len(n.backlog) == 0 {
		n.backlog = nil
		n.log.Info("first start: the findings in the topic before it are consumed", "skipped", n.skippedN, "delivered", n.deliveredFirst,
			"skip_raised_before", n.set.skipBefore, "since", n.cfg.Since)
	}
}

func (n *Notifier) sumLag() int64 {
	var s int64
	for _, l := range n.lag {
		s += max(l, 0)
	}
	return s
}

// handle delivers one record to every receiver, or dead-letters it per
// receiver that did not take it. It returns an error only when ctx ended
// first (nothing may be committed then).
func (n *Notifier) handle(ctx context.Context, m *kafka.Message) error {
	f, err := detect.ParseFinding(m.Value)
	if err != nil {
		n.m.DeadLetters.WithLabelValues("none", "").Inc()
		return n.deadLetter(ctx, m, model.RejectBadJSON, err.Error())
	}
	now := n.now()
	alerts, out := n.set.apply(&f, n.cfg.ServeURL, now, n.cfg.Lease)
	n.gauges(now)
	switch out {
	case stale:
		n.log.Debug("finding record seen before; not delivered again", "fingerprint", f.Fingerprint, "seq", f.Seq)
		return nil
	case skipped:
		n.skippedN++
		n.m.Skipped.Inc()
		n.log.Debug("finding raised before the group's first start window; recorded as seen, not delivered",
			"fingerprint", f.Fingerprint, "seq", f.Seq, "raised_at", f.RaisedAt, "skip_raised_before", n.set.skipBefore)
		return nil
	case held:
		n.woken()
	}
	if n.backlog != nil {
		n.deliveredFirst++
	}
	type job struct {
		rcv  receiver
		send func(context.Context) error
	}
	var jobs []job
	for _, u := range n.cfg.AlertmanagerURLs {
		if len(alerts) == 0 {
			// Held, resolved within its hold, or a blocked finding with no
			// root alert open to update (it pages through its root):
			// nothing for Alertmanager.
			break
		}
		jobs = append(jobs, job{receiver{"alertmanager", u}, func(ctx context.Context) error {
			mu := n.amLocks[u]
			mu.Lock()
			defer mu.Unlock()
			return postAlerts(ctx, n.http, u, alerts)
		}})
	}
	for _, u := range n.cfg.WebhookURLs {
		jobs = append(jobs, job{receiver{"webhook", u}, func(ctx context.Context) error {
			return postWebhook(ctx, n.http, u, []byte(n.cfg.WebhookSecret), m.Value, f.Fingerprint, f.Seq, n.now())
		}})
	}
	errs := make([]error, len(jobs))
	missed := make([]string, len(jobs)) // per receiver: why it did not take the record
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			missed[i], errs[i] = n.deliver(ctx, j.rcv, &f, m, j.send)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// One outcome, one line: delivered to every receiver, or not (and
	// dead-lettered for those that did not take it).
	var reasons []string
	for _, r := range missed {
		if r != "" {
			reasons = append(reasons, r)
		}
	}
	attrs := []any{"batch", f.Batch.String(), "kind", f.Kind, "name", f.Name, "state", f.State,
		"status", f.Status, "fingerprint", f.Fingerprint, "seq", f.Seq}
	if len(reasons) > 0 {
		n.log.Error("finding not delivered; written to the dead-letter topic", append(attrs,
			"receivers", len(jobs), "delivered_to", len(jobs)-len(reasons), "reason", strings.Join(reasons, "; "))...)
		return nil
	}
	msg := "finding delivered"
	switch {
	case out == held:
		msg = "finding delivered, its alert held: it pages when the hold runs out, if still open"
		attrs = append(attrs, "held_until", f.RaisedAt.Add(n.set.holdOf(&f)))
	case len(alerts) == 0 && len(n.cfg.AlertmanagerURLs) > 0:
		msg = "finding delivered; resolved within its hold, it never paged"
	}
	n.log.Info(msg, append(attrs, "receivers", len(jobs), "alerts", len(alerts))...)
	return nil
}

// deliver sends one record to one receiver, retrying for RetryFor; when
// the receiver still has not taken it (or refused it for good: a 4xx),
// the record goes to the dead-letter topic with the reason, which deliver
// returns (empty: delivered). The caller logs the outcome.
func (n *Notifier) deliver(ctx context.Context, r receiver, f *detect.Finding, m *kafka.Message, send func(context.Context) error) (string, error) {
	var permanent error
	rctx, cancel := context.WithTimeout(ctx, n.cfg.RetryFor)
	defer cancel()
	what := fmt.Sprintf("deliver finding %s seq %d (%s) to %s %s", f.Fingerprint, f.Seq, f.Batch, r.kind, r.url)
	attempts := 0
	err := retry.Retrier{Log: n.log, Max: n.cfg.RetryMax}.Do(rctx, r.kind, what, 0, func(actx context.Context) error {
		attempts++
		err := send(actx)
		var he *httpError
		if errors.As(err, &he) && he.permanent {
			permanent = err
			return nil
		}
		if err != nil {
			n.m.Errors.WithLabelValues(r.kind, r.url).Inc()
		}
		return err
	})
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err == nil && permanent == nil {
		n.m.Delivered.WithLabelValues(r.kind, r.url).Inc()
		return "", nil
	}
	reason := fmt.Sprintf("%s %s did not take the finding after %d attempts in %v: %v", r.kind, r.url, attempts, n.cfg.RetryFor, err)
	if permanent != nil {
		reason = fmt.Sprintf("%s %s refused the finding (not retried): %v", r.kind, r.url, permanent)
	}
	n.m.DeadLetters.WithLabelValues(r.kind, r.url).Inc()
	return reason, n.deadLetter(ctx, m, RejectUndeliverable, reason)
}

// deadLetter writes the record, unchanged, to the dead-letter topic with
// the reason, retrying until Kafka took it or ctx ended.
func (n *Notifier) deadLetter(ctx context.Context, m *kafka.Message, kind model.RejectKind, reason string) error {
	msgs := deadletter.Messages([]schema.DeadLetter{{
		ReceivedMS: n.now().UnixMilli(),
		Source:     schema.Source{Topic: m.Topic, Partition: int32(m.Partition), Offset: m.Offset},
		Key:        string(m.Key), Reason: kind, Error: reason, Payload: m.Value,
	}})
	return n.retrier().Do(ctx, "dlq_write", "write a dead letter to "+n.cfg.DLQTopic, 0,
		func(ctx context.Context) error { return n.dlq.WriteMessages(ctx, msgs...) })
}

// rebuild folds the records the group has committed (delivered before)
// into the open set, without delivering them: every partition of the
// findings topic from its first retained offset to the committed one.
func (n *Notifier) rebuild(ctx context.Context) error {
	start := time.Now()
	client := &kafka.Client{Addr: kafka.TCP(n.cfg.Kafka.Brokers...), Timeout: 15 * time.Second}
	var parts []int
	var first, end, committed map[int]int64
	var firstStart bool
	err := n.retrier().Do(ctx, retry.Startup, "read the offsets of "+n.cfg.FindingsTopic+" and group "+n.cfg.Group, 0, func(ctx context.Context) error {
		var err error
		parts, first, end, committed, firstStart, err = offsets(ctx, client, n.cfg.FindingsTopic, n.cfg.Group)
		return err
	})
	if err != nil {
		return err
	}
	if err := n.skipTime(ctx, client, firstStart, first, end); err != nil {
		return err
	}
	records, skips := 0, 0
	for _, p := range parts {
		from, to := first[p], committed[p]
		if to <= from {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: n.cfg.Kafka.Brokers, Topic: n.cfg.FindingsTopic, Partition: p,
			MinBytes: 1, MaxBytes: 2 * topics.MaxMessageBytes, MaxWait: 500 * time.Millisecond,
		})
		if err := r.SetOffset(from); err != nil {
			r.Close()
			return fmt.Errorf("rebuild open findings: seek %s[%d] to %d: %w", n.cfg.FindingsTopic, p, from, err)
		}
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				return fmt.Errorf("rebuild open findings: read %s[%d] up to offset %d: %w", n.cfg.FindingsTopic, p, to, err)
			}
			if f, err := detect.ParseFinding(m.Value); err == nil {
				if _, out := n.set.apply(&f, n.cfg.ServeURL, n.now(), n.cfg.Lease); out == skipped {
					skips++
				}
				records++
			}
			if m.Offset >= to-1 {
				break
			}
		}
		r.Close()
	}
	now := n.now()
	n.gauges(now)
	open, held := n.set.counts(now)
	n.log.Info("open findings rebuilt from the delivered records", "records", records, "open", open, "held", held,
		"skipped", skips, "took", time.Since(start))
	return nil
}

// skipTime sets the open set's skip time from the group's state: on the
// group's first start (no committed offset) it decides it (the clock
// minus Since) and writes it to the state topic before anything is
// delivered; on any other start it reads it back. A group that has
// committed offsets but no state (it started before notify kept one)
// skips nothing.
func (n *Notifier) skipTime(ctx context.Context, c *kafka.Client, firstStart bool, first, end map[int]int64) error {
	if firstStart {
		now := n.now().UTC()
		st := groupState{Group: n.cfg.Group, FirstStart: now, Since: n.cfg.Since.String()}
		if n.cfg.Since > 0 {
			st.SkipRaisedBefore = now.Add(-n.cfg.Since)
		}
		if err := writeState(ctx, n.state, st); err != nil {
			return err
		}
		n.set.skipBefore = st.SkipRaisedBefore
		n.backlog = map[int]int64{}
		for p, e := range end {
			if e > first[p] {
				n.backlog[p] = e
			}
		}
		n.log.Info("first start of the group: findings raised before the window are recorded as seen and not delivered",
			"group", n.cfg.Group, "since", n.cfg.Since, "skip_raised_before", st.SkipRaisedBefore, "backlog_partitions", len(n.backlog))
		if len(n.backlog) == 0 {
			n.backlog = nil
		}
		return nil
	}
	var st groupState
	var found bool
	err := n.retrier().Do(ctx, retry.Startup, "read the state of group "+n.cfg.Group+" from "+n.cfg.StateTopic, 0, func(ctx context.Context) error {
		var err error
		st, found, err = readState(ctx, c, n.cfg.Kafka.Brokers, n.cfg.StateTopic, n.cfg.Group)
		return err
	})
	if err != nil {
		return err
	}
	if !found {
		n.log.Info("the group has committed offsets but no state record (it started before notify kept one): no finding is skipped",
			"group", n.cfg.Group, "state_topic", n.cfg.StateTopic)
		return nil
	}
	n.set.skipBefore = st.SkipRaisedBefore
	return nil
}

// offsets returns the partitions of topic with their first retained offset,
// their end offset and the group's committed offset (the first offset when
// none), and whether the group has committed none at all (its first start).
func offsets(ctx context.Context, c *kafka.Client, topic, group string) (parts []int, first, end, committed map[int]int64, firstStart bool, err error) {
	fail := func(err error) ([]int, map[int]int64, map[int]int64, map[int]int64, bool, error) {
		return nil, nil, nil, nil, false, err
	}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return fail(fmt.Errorf("metadata of topic %s: %w", topic, err))
	}
	if len(meta.Topics) != 1 || meta.Topics[0].Error != nil {
		return fail(fmt.Errorf("metadata of topic %s: %v", topic, meta.Topics))
	}
	var reqs []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		parts = append(parts, p.ID)
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	lo, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return fail(fmt.Errorf("offsets of topic %s: %w", topic, err))
	}
	first, end, committed = map[int]int64{}, map[int]int64{}, map[int]int64{}
	for _, p := range lo.Topics[topic] {
		if p.Error != nil {
			return fail(fmt.Errorf("offsets of %s[%d]: %w", topic, p.Partition, p.Error))
		}
		first[p.Partition], end[p.Partition] = p.FirstOffset, p.LastOffset
	}
	of, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return fail(fmt.Errorf("committed offsets of group %s on %s: %w", group, topic, err))
	}
	firstStart = true
	for _, p := range of.Topics[topic] {
		if p.Error != nil {
			return fail(fmt.Errorf("committed offset of group %s on %s[%d]: %w", group, topic, p.Partition, p.Error))
		}
		if p.CommittedOffset >= 0 {
			firstStart = false
		}
		committed[p.Partition] = max(p.CommittedOffset, first[p.Partition])
	}
	return parts, first, end, committed, firstStart, nil
}

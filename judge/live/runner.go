// Package live runs the analyzer's streaming detector (analyzer/detect)
// over the events topic: it owns the batches of the partitions the consumer
// group gives it, rebuilds their state from the stored history, folds every
// new event, fires deadlines once the evidence is complete up to them (the
// watermark of judge/stream), and publishes findings to the findings topic.
//
// It writes nothing to ClickHouse: findings and the detector's heartbeats
// go to Kafka, and handoff ingest stores them (ingest stays the only
// writer). Before it reads history for a partition it waits until the
// ingester has committed (so stored) every event before the position the
// detector resumes from, and every finding published before; otherwise a
// restart would judge batches on a partial history.
package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/retry"
	"github.com/handoff-dev/handoff/judge/stream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/schema"
)

// History reads what handoff ingest has stored. store/history implements it.
type History interface {
	// PartitionEvents calls fn for every stored event of the events topic's
	// partitions with a business date on or after from, heartbeats included
	// (any order; duplicates allowed).
	PartitionEvents(ctx context.Context, topic string, partitions []int, from model.Date, fn func(*model.Event) error) error
	// BatchEvents calls fn for every stored event of one batch.
	BatchEvents(ctx context.Context, key model.BatchKey, fn func(*model.Event) error) error
	// Findings calls fn with the latest stored record of each finding
	// fingerprint whose batch has a business date on or after from, is of
	// the events partitions ps (the zero value: any) and, when keep is
	// not nil, for which keep is true (any order; what
	// detect.Detector.Restore reads is enough, the diagnosis may be left
	// out). ps is the server's filter, by the partition stored with the
	// records (the publisher's header); keep is the last word, for the
	// records stored without one. The finding is valid only during the
	// call.
	Findings(ctx context.Context, from model.Date, ps history.EventsPartitions, keep func(model.BatchKey) bool, fn func(*detect.Finding) error) error
}

// Offsets tells what a consumer group has committed and what a topic holds.
type Offsets interface {
	Committed(ctx context.Context, group, topic string, partitions []int) (map[int]int64, error)
	Ends(ctx context.Context, topic string) (map[int]int64, error)
}

// Publisher sends messages to a topic and returns once the brokers have
// acknowledged them (acks=all). Once it has returned without an error,
// the messages and the bytes they point to are the caller's again: the
// runner reuses them for the next findings.
type Publisher interface {
	Publish(ctx context.Context, topic string, msgs ...kafka.Message) error
}

// Options are what a Runner needs besides its configuration.
type Options struct {
	Detector  *detect.Detector
	History   History
	Offsets   Offsets
	Publisher Publisher
	Metrics   *Metrics // nil: not measured
	Logger    *slog.Logger
	// Partition returns the partition of a batch key among n; nil means
	// the producers' default, Java's murmur2 (Murmur2).
	Partition func(key []byte, n int) int
	// Now is the clock (default time.Now): the history read on start
	// reaches back Retain days from it.
	Now func() time.Time
}

// Settings configure a Runner.
type Settings struct {
	EventsTopic   string
	FindingsTopic string
	// IngestGroup is the consumer group of handoff ingest on the events
	// topic; ResultsGroup the one on the findings topic. Their commits say
	// what ClickHouse holds.
	IngestGroup  string
	ResultsGroup string
	// Retain is how many days of history are read on start (the
	// detector's retention).
	Retain int
	// Heartbeat is how often the detector publishes its own
	// process.heartbeat event (0: never).
	Heartbeat time.Duration
	// Instance names this process in its heartbeats (component).
	Instance string
	// WaitPoll is how often the ingester's progress is polled while
	// waiting for it (default 500ms).
	WaitPoll time.Duration
}

// Runner is a stream.Handler that drives a detect.Detector.
type Runner struct {
	s     Settings
	o     Options
	log   *slog.Logger
	dec   model.Decoder
	owned map[int]bool
	// unsure is the partitions (of n) for which an Advance cut short (the
	// group rebalanced) left findings the detector holds for published
	// that may not be: those of the chunk whose Publish failed and every
	// later one. The next Assign reads them back; the other partitions'
	// findings were all acknowledged and are kept. unsureAll: every
	// partition (findings of no known partition).
	unsure    map[int]bool
	unsureAll bool
	key       []byte // owns' buffer
	n         int    // partitions of the events topic
	ids       []int  // 0..n-1, for the default partitioner
	// lastBeat is when the last heartbeat was published.
	lastBeat time.Time
	// assignedAt is the clock when the last partitions were taken over;
	// caughtUp says whether the safe time has reached it since (logged
	// once per assignment: every event in the topic then is judged).
	assignedAt time.Time
	caughtUp   bool
	// Published counts the findings published, for tests and logs.
	published int
	retry     retry.Retrier
	// buf, msgs and hdrs are the findings' records, messages and their
	// headers of the last chunk published, reused for the next
	// (publishing).
	buf  []byte
	msgs []kafka.Message
	hdrs []kafka.Header
	// progress is read by other goroutines (Progress).
	advances, safeMs, publishedTotal atomic.Int64
}

var (
	_ stream.Handler   = (*Runner)(nil)
	_ stream.Scheduler = (*Runner)(nil)
)

// New returns a Runner.
func New(s Settings, o Options) (*Runner, error) {
	switch {
	case o.Detector == nil || o.History == nil || o.Offsets == nil || o.Publisher == nil:
		return nil, errors.New("detection: Detector, History, Offsets and Publisher are required")
	case s.EventsTopic == "" || s.FindingsTopic == "":
		return nil, errors.New("detection: the events and findings topics are required")
	case s.IngestGroup == "" || s.ResultsGroup == "":
		return nil, errors.New("detection: the ingester's consumer groups are required (to know what ClickHouse holds)")
	}
	if s.Retain <= 0 {
		s.Retain = detect.DefaultRetain
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if s.WaitPoll <= 0 {
		s.WaitPoll = 500 * time.Millisecond
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{s: s, o: o, log: log, owned: map[int]bool{}, retry: retry.Retrier{Log: log, Max: 10 * time.Second}}, nil
}

// Progress reports how many times the runner advanced, the detector's
// safe time after the last advance, and how many findings it published.
// Unlike the rest of the Runner it is safe for concurrent use.
func (r *Runner) Progress() (advances int64, safe time.Time, published int64) {
	return r.advances.Load(), time.UnixMilli(r.safeMs.Load()).UTC(), r.publishedTotal.Load()
}

func (r *Runner) owns(k model.BatchKey) bool {
	if r.n == 0 {
		return false
	}
	return r.owned[r.batchPartition(k)]
}

// batchPartition is the events topic's partition of batch k among r.n
// (r.n > 0), from the key's text (k.String()) in a buffer of the
// runner's: asked for every batch a restore or the stream opens.
func (r *Runner) batchPartition(k model.BatchKey) int {
	b := append(r.key[:0], k.Pipeline...)
	b = append(b, '/')
	b = k.BusinessDate.AppendFormat(b)
	b = append(b, '/')
	b = append(b, k.BatchID...)
	r.key = b
	return r.partitionOf(b)
}

// partitionOf is the events topic's partition of a batch key's text
// among r.n (r.n > 0).
func (r *Runner) partitionOf(key []byte) int {
	if r.o.Partition != nil {
		return r.o.Partition(key, r.n)
	}
	return murmur2In(key, r.ids)
}

// Assign takes over the partitions of a: batches of partitions no longer
// owned are released; the history and findings of newly owned ones are
// read back once the ingester has stored them.
func (r *Runner) Assign(ctx context.Context, a stream.Assignment) error {
	began := time.Now()
	prevN := r.n
	switch {
	case r.unsureAll:
		// An advance cut short before the runner knew its partitions:
		// every partition is read back.
		r.owned = nil
		n := r.o.Detector.Release(func(model.BatchKey) bool { return true })
		r.log.Info("detect: an advance was cut short by a rebalance; every partition assigned is read back", "released_batches", n)
	case len(r.unsure) > 0:
		// An advance cut short: of these partitions the detector holds
		// findings for published that may not be, so they are released
		// and read back if assigned again (the findings acknowledged are
		// stored by then: the restore waits for the ingester). The other
		// partitions' findings were all acknowledged: they are kept.
		unsure := sortedKeys(r.unsure)
		for _, p := range unsure {
			delete(r.owned, p)
		}
		n := r.o.Detector.Release(func(k model.BatchKey) bool { return r.unsure[r.batchPartition(k)] })
		r.log.Info("detect: an advance was cut short by a rebalance; the partitions it left findings unpublished of are read back",
			"partitions", unsure, "released_batches", n)
	}
	r.unsure, r.unsureAll = nil, false
	var fresh []int
	next := make(map[int]bool, len(a.Start))
	for p := range a.Start {
		next[p] = true
		if !r.owned[p] || prevN != a.Partitions {
			fresh = append(fresh, p)
		}
	}
	r.n = a.Partitions
	if r.o.Metrics != nil {
		r.o.Metrics.assigned()
	}
	if len(r.ids) != r.n {
		r.ids = partitionIDs(r.n)
	}
	r.owned = next
	r.assignedAt, r.caughtUp = r.o.Now(), false
	// The watermark's first safe time of this assignment is taken after
	// now, on the same clock: heartbeats of the history up to now count at
	// once, later ones once the safe time reaches them (as diagnose as of
	// that time counts them).
	r.o.Detector.Floor(r.assignedAt)
	released := r.o.Detector.Release(func(k model.BatchKey) bool { return !r.owns(k) })
	r.o.Detector.SetOwns(r.owns)
	r.log.Info("detect: partitions assigned", "owned", a.Owned(), "new", len(fresh), "released_batches", released)
	if len(fresh) == 0 {
		return nil
	}
	slices.Sort(fresh)
	// A takeover that does not finish (ctx cancelled: the group rebalanced
	// meanwhile, stream.Member) leaves the new partitions half read: they
	// are given up, with what was folded and restored of them, so that the
	// next assignment that gives them reads them whole.
	done := false
	defer func() {
		if done {
			return
		}
		for _, p := range fresh {
			delete(r.owned, p)
		}
		n := r.o.Detector.Release(func(k model.BatchKey) bool { return !r.owns(k) })
		r.log.Info("detect: takeover cut short; its partitions are given up until assigned again",
			"partitions", fresh, "released_batches", n, "took", time.Since(began).Round(time.Millisecond).String())
	}()
	// The restore's log splits its time: after a fault the waits for the
	// ingester and the results consumer can outlast the reads, and only
	// the reads are the detector's work.
	var phase restorePhases
	mark := phase.start()
	// Everything before the resume position must be in ClickHouse before
	// it is read back; otherwise a restart judges a partial history.
	want := make(map[int]int64, len(fresh))
	for _, p := range fresh {
		want[p] = a.Start[p]
	}
	if err := r.waitCommitted(ctx, r.s.IngestGroup, r.s.EventsTopic, want); err != nil {
		return err
	}
	phase.waitIngest = mark()
	from := r.horizon()
	n := 0
	// ClickHouse may not be ready (or ingest may not have created the
	// database yet): wait and retry rather than exit. Observing a history
	// twice is harmless: the replay ignores duplicates.
	// The history grows with the retention window and the partitions
	// taken over: a minute per attempt (the default) is not enough for
	// millions of events, and a read that cannot finish in one attempt
	// never finishes (seen on the local cluster: 6 million events, every
	// attempt cut at a minute). ClickHouse's read timeout still ends a
	// read from a server that stopped answering.
	restore := r.retry
	restore.Attempt = restoreAttempt
	err := restore.Do(ctx, "restore", fmt.Sprintf("read the stored history of partitions %v since %s", fresh, from), 0, func(ctx context.Context) error {
		return r.o.History.PartitionEvents(ctx, r.s.EventsTopic, fresh, from, func(e *model.Event) error {
			n++
			r.o.Detector.Observe(e)
			return nil
		})
	})
	if err != nil {
		return err
	}
	phase.events = mark()
	// The findings published before (by this process or the partitions'
	// previous owner) must be stored too, or they would be raised again.
	var ends map[int]int64
	err = r.retry.Do(ctx, "restore", "read the end offsets of "+r.s.FindingsTopic, 0, func(ctx context.Context) error {
		var err error
		ends, err = r.o.Offsets.Ends(ctx, r.s.FindingsTopic)
		return err
	})
	if err != nil {
		return err
	}
	if err := r.waitCommitted(ctx, r.s.ResultsGroup, r.s.FindingsTopic, ends); err != nil {
		return err
	}
	phase.waitResults = mark()
	// Restored one by one as they are read: restoring a finding twice (a
	// read retried) is harmless, the record with the highest seq wins.
	// A record the detector refuses is no failure of the read: it stops
	// the restore rather than being read again.
	var (
		restored, open int
		refused        error
	)
	taken := make(map[int]bool, len(fresh))
	for _, p := range fresh {
		taken[p] = true
	}
	isFresh := func(k model.BatchKey) bool { return taken[r.batchPartition(k)] }
	err = restore.Do(ctx, "restore", fmt.Sprintf("read the stored findings since %s", from), 0, func(ctx context.Context) error {
		restored, open = 0, 0
		// Only the batches of the partitions taken over, filtered by the
		// server: the detector would ignore the findings of the
		// partitions not owned, and holds those of the partitions it kept.
		// A takeover of half the partitions read every stored finding
		// before (809,170 on the local cluster after a fault, 2026-12-02),
		// to drop half of them here.
		err := r.o.History.Findings(ctx, from, history.EventsPartitions{Take: fresh, Count: r.n}, isFresh, func(f *detect.Finding) error {
			if refused = r.o.Detector.Restore(*f); refused != nil {
				return refused
			}
			restored++
			if f.State != detect.Open {
				return nil
			}
			// The first 20, so that a restart says what is open without
			// flooding the log.
			if open++; open <= 20 {
				r.log.Info("detect: open finding restored (published before, not again)", "batch", f.Batch.String(),
					"kind", string(f.Kind), "name", f.Name, "status", string(f.Status), "verdict", f.Verdict,
					"seq", f.Seq, "fingerprint", f.Fingerprint)
			}
			return nil
		})
		if refused != nil {
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	if refused != nil {
		return fmt.Errorf("restore the stored findings (%d restored before): %w", restored, refused)
	}
	done = true
	phase.findings = mark()
	r.log.Info("detect: history restored", "partitions", fresh, "events", n, "findings", restored, "open", open, "from", from.String(),
		"took", time.Since(began).Round(time.Millisecond).String(),
		"waited_for_ingest", phase.waitIngest.String(), "read_events", phase.events.String(),
		"waited_for_results", phase.waitResults.String(), "read_findings", phase.findings.String())
	return nil
}

// restorePhases is the time of each part of a restore, to the millisecond:
// the wait for the ingester's commits, the read and fold of the events,
// the wait for the results consumer and the read and restore of the
// findings.
type restorePhases struct {
	waitIngest, events, waitResults, findings time.Duration
}

// start returns a function that returns the time since the last call
// (the first: since start was called).
func (restorePhases) start() func() time.Duration {
	last := time.Now()
	return func() time.Duration {
		now := time.Now()
		d := now.Sub(last)
		last = now
		return d.Round(time.Millisecond)
	}
}

// horizon is the first business date of the history read on start.
func (r *Runner) horizon() model.Date {
	s := r.o.Detector.Stats().Safe
	if s.IsZero() {
		s = r.o.Now()
	}
	y, m, d := s.UTC().Date()
	return model.Date{Year: y, Month: m, Day: d}.AddDays(-r.s.Retain)
}

// waitCommitted waits until group has committed at least want[p] on every
// partition p of topic. A partition where want is 0 needs nothing.
func (r *Runner) waitCommitted(ctx context.Context, group, topic string, want map[int]int64) error {
	parts := make([]int, 0, len(want))
	for p, o := range want {
		if o > 0 {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	slices.Sort(parts)
	started := time.Now()
	lastLog := started
	for {
		got, err := r.o.Offsets.Committed(ctx, group, topic, parts)
		behind := map[int]int64{}
		if err == nil {
			for _, p := range parts {
				if got[p] < want[p] {
					behind[p] = want[p] - max(got[p], 0)
				}
			}
			if len(behind) == 0 {
				return nil
			}
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			r.log.Warn("detect: waiting for handoff ingest to store what the detector reads back; is `handoff ingest` running?",
				"group", group, "topic", topic, "behind", fmt.Sprint(behind), "err", err, "waited", time.Since(started).Round(time.Second).String())
		}
		if r.o.Metrics != nil {
			r.o.Metrics.waiting.Set(1)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.s.WaitPoll):
		}
		if r.o.Metrics != nil {
			r.o.Metrics.waiting.Set(0)
		}
	}
}

// Fold observes one message. A message that is not a valid event is
// skipped: handoff ingest dead-letters it with the reason.
func (r *Runner) Fold(ctx context.Context, m kafka.Message) error {
	e, err := r.dec.Decode(m.Value)
	if err != nil {
		if r.o.Metrics != nil {
			r.o.Metrics.invalid.Inc()
		}
		return nil
	}
	if r.o.Metrics != nil {
		r.o.Metrics.folded.Inc()
	}
	r.o.Detector.Observe(&e)
	return nil
}

// restoreAttempt bounds one attempt at reading a detector's history back.
const restoreAttempt = time.Hour

// Advance reads back the history of reopened batches, advances the
// detector and publishes its findings, then the heartbeat when due.
func (r *Runner) Advance(ctx context.Context, now, safe time.Time) error {
	for _, k := range r.o.Detector.Suspended() {
		err := r.retry.Do(ctx, "reopen", "read the stored history of reopened batch "+k.String(), 0, func(ctx context.Context) error {
			return r.o.History.BatchEvents(ctx, k, func(e *model.Event) error {
				r.o.Detector.Observe(e)
				return nil
			})
		})
		if err != nil {
			return err
		}
		r.o.Detector.Resume(k)
	}
	t0 := time.Now()
	pub := publishing{r: r, ctx: ctx, buf: r.buf[:0], msgs: r.msgs[:0], hdrs: r.hdrs[:0]}
	r.o.Detector.AdvanceEach(now, safe, pub.add)
	if err := pub.flush(); err != nil {
		// The group rebalanced (stream.Member) or the brokers failed: the
		// detector took the findings of this advance for published, and
		// some are not. publishing marked their partitions unsure; the
		// next assignment reads them back.
		return err
	}
	if r.o.Metrics != nil {
		// One observation of each stage per advance, as when the findings
		// were published at once: judging (and encoding) is the advance's
		// time but for the publishing.
		r.o.Metrics.Stage(StageJudge, time.Since(t0)-pub.publishing)
		if pub.total > 0 {
			r.o.Metrics.Stage(StagePublish, pub.publishing)
		}
	}
	if pub.total > 0 {
		r.logFindings(ctx, &pub)
	}
	if r.o.Metrics != nil {
		r.o.Metrics.observe(r.o.Detector.Stats(), now, safe)
	}
	if !r.caughtUp && !r.assignedAt.IsZero() && !safe.Before(r.assignedAt) {
		r.caughtUp = true
		st := r.o.Detector.Stats()
		r.log.Info("detect: caught up: every event that was in the topic when the partitions were assigned is folded and judged",
			"evidence_as_of", model.FormatTime(safe), "open_batches", st.Open, "closed_batches", st.Closed, "published", r.published)
	}
	r.publishedTotal.Store(int64(r.published))
	r.safeMs.Store(r.o.Detector.Safe().UnixMilli())
	r.advances.Add(1)
	if r.s.Heartbeat > 0 && now.Sub(r.lastBeat) >= r.s.Heartbeat {
		if err := r.heartbeat(ctx, now, safe); err != nil {
			// A missed heartbeat is visible on the dashboards; it must not
			// stop detection.
			r.log.Warn("detect: heartbeat not published", "err", err)
		} else {
			r.lastBeat = now
		}
	}
	return nil
}

// findingsLogged is how many findings of one advance are logged one by
// one (at debug level); the rest are counted in the advance's summary.
const findingsLogged = 10

// Findings are published in chunks of up to publishRecords records or
// publishBytes bytes of JSON, as the detector makes them: after a fault or
// a restart one advance can raise hundreds of thousands of findings (a
// diagnosis of 3 to 4 KiB each), which held at once, with their encoded
// records, took gigabytes.
const (
	publishRecords = 1000
	publishBytes   = 4 << 20
)

// publishing encodes and publishes the findings of one advance as the
// detector hands them over, and keeps what logFindings and the metrics
// need of them.
type publishing struct {
	r   *Runner
	ctx context.Context
	// publishing is the time spent in Publish.
	publishing time.Duration
	// buf holds the chunk's keys, records and header values, msgs and
	// hdrs their messages and headers: the runner's, reused once a
	// Publish has returned.
	buf  []byte
	msgs []kafka.Message
	hdrs []kafka.Header
	// parts is the events partition of each of msgs (-1: not known), to
	// mark unsure if their Publish fails.
	parts []int
	// err is the first failed publish: later findings are dropped (their
	// partitions marked unsure), and the advance fails with it.
	err    error
	total  int
	byKind map[string]int
	sample []detect.Finding
}

func (p *publishing) add(f *detect.Finding) {
	if p.err != nil {
		part := -1
		if p.r.n > 0 {
			part = p.r.batchPartition(f.Batch)
		}
		p.r.markUnsure(part)
		return
	}
	p.total++
	if p.byKind == nil {
		p.byKind = map[string]int{}
	}
	p.byKind[string(f.Kind)+"/"+string(f.State)]++
	if p.r.o.Metrics != nil {
		p.r.o.Metrics.counted(f)
	}
	if len(p.sample) < findingsLogged {
		s := *f
		s.Diagnosis = replay.Diagnosis{}
		p.sample = append(p.sample, s)
	}
	// The key (the batch key, as String writes it) and the record share
	// the chunk's buffer.
	k := f.Batch
	start := len(p.buf)
	p.buf = append(p.buf, k.Pipeline...)
	p.buf = append(p.buf, '/')
	p.buf = k.BusinessDate.AppendFormat(p.buf)
	p.buf = append(p.buf, '/')
	p.buf = append(p.buf, k.BatchID...)
	mid := len(p.buf)
	p.buf = f.AppendJSON(p.buf)
	end := len(p.buf)
	// The batch's events partition, for a takeover's read of the stored
	// findings of its partitions (schema.EventsPartitionHeader): in the
	// buffer too, its header one of the chunk's.
	var hs []kafka.Header
	part := -1
	if p.r.n > 0 {
		part = p.r.partitionOf(p.buf[start:mid])
		p.buf = schema.AppendEventsPartition(p.buf, part, p.r.n)
		p.hdrs = append(p.hdrs, kafka.Header{Key: schema.EventsPartitionHeader, Value: p.buf[end:len(p.buf):len(p.buf)]})
		hs = p.hdrs[len(p.hdrs)-1 : len(p.hdrs) : len(p.hdrs)]
	}
	p.msgs = append(p.msgs, kafka.Message{Key: p.buf[start:mid:mid], Value: p.buf[mid:end:end], Headers: hs})
	p.parts = append(p.parts, part)
	if len(p.msgs) >= publishRecords || len(p.buf) >= publishBytes {
		p.err = p.flush()
	}
}

// flush publishes the chunk's messages.
func (p *publishing) flush() error {
	if p.err != nil || len(p.msgs) == 0 {
		return p.err
	}
	r := p.r
	t1 := time.Now()
	defer func() { p.publishing += time.Since(t1) }()
	if err := r.o.Publisher.Publish(p.ctx, r.s.FindingsTopic, p.msgs...); err != nil {
		p.err = fmt.Errorf("publish %d findings to %s: %w", len(p.msgs), r.s.FindingsTopic, err)
		// Some of the chunk may have reached the brokers, some not: its
		// partitions are unsure.
		for _, part := range p.parts {
			r.markUnsure(part)
		}
		// A write cut short may still be reading the buffer.
		r.buf, r.msgs, r.hdrs = nil, nil, nil
		return p.err
	}
	r.published += len(p.msgs)
	clear(p.msgs)
	clear(p.hdrs)
	p.parts = p.parts[:0]
	r.buf, r.msgs, r.hdrs = p.buf[:0], p.msgs[:0], p.hdrs[:0]
	p.buf, p.msgs, p.hdrs = r.buf, r.msgs, r.hdrs
	return nil
}

// markUnsure records that findings of partition p (-1: not known) the
// detector holds for published may not be.
func (r *Runner) markUnsure(p int) {
	if p < 0 {
		r.unsureAll = true
		return
	}
	if r.unsure == nil {
		r.unsure = map[int]bool{}
	}
	r.unsure[p] = true
}

// logFindings logs what one advance published: a summary line by kind and
// state at info, and a sample of the findings themselves at debug. After
// a fault or a restart an advance can publish hundreds of thousands of
// records: a line each was about 270 bytes and 8 us of the detector's
// time per finding (750,000 findings: 190 MiB of log, 6 s on a loaded
// machine), on the disk the brokers and ClickHouse write to.
func (r *Runner) logFindings(ctx context.Context, p *publishing) {
	r.log.Info("detect: findings published", "count", p.total, "by_kind", fmt.Sprint(p.byKind), "published_total", r.published)
	if !r.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	for _, f := range p.sample {
		r.log.Debug("detect: finding", "batch", f.Batch.String(), "kind", string(f.Kind), "name", f.Name,
			"state", string(f.State), "status", string(f.Status), "verdict", f.Verdict,
			"seq", f.Seq, "fingerprint", f.Fingerprint)
	}
}

// HeartbeatPipeline is the pipeline name of the detector's own heartbeats.
const HeartbeatPipeline = "handoff.detect"

func (r *Runner) heartbeat(ctx context.Context, now, safe time.Time) error {
	st := r.o.Detector.Stats()
	ms := now.UTC().UnixMilli()
	e := model.Event{
		Spec:      model.SpecV1,
		ID:        "hb-" + r.s.Instance + "-" + strconv.FormatInt(ms, 10),
		Type:      model.ProcessHeartbeat,
		Time:      time.UnixMilli(ms).UTC(),
		Pipeline:  HeartbeatPipeline,
		System:    model.Operator,
		Component: r.s.Instance,
		Attrs: map[string]string{
			"open_batches":   strconv.Itoa(st.Open),
			"evidence_as_of": string(model.AppendTime(nil, safe)),
			"partitions":     fmt.Sprint(sortedKeys(r.owned)),
		},
	}
	return r.o.Publisher.Publish(ctx, r.s.EventsTopic, kafka.Message{Key: []byte(e.PartitionKey()), Value: e.AppendJSON(nil)})
}

// NextDue is when the detector's next deadline falls due: the member
// reads the end offsets then and advances as soon as they are folded, so
// a deadline fires within a round trip of passing, not at the next tick.
func (r *Runner) NextDue() time.Time { return r.o.Detector.NextDue() }

// Revoke keeps the state: the next Assign releases what is no longer
// owned and keeps what is (no other member folded it in between).
func (r *Runner) Revoke(context.Context) {}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Detector returns the detector the runner drives. It is not safe for
// concurrent use: read it only once Run has returned.
func (r *Runner) Detector() *detect.Detector { return r.o.Detector }

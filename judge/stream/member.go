// Package stream runs a partition-aware Kafka consumer group member for
// consumers that keep state per partition, such as the streaming detector:
// the handler learns which partitions it owns (to rebuild their state and
// take over their timers), folds their messages one at a time, and is told
// regularly how late it is and how fresh its evidence is (the Watermark).
// Offsets are committed only after the handler said the work for the folded
// messages is durable.
//
// The events consumer of handoff ingest does not need ownership and uses a
// plain group reader; this package exists because a detector that owns the
// deadlines of its batches must know exactly which batches are its own, and
// must hand them over on a rebalance.
package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/segmentio/kafka-go"
)

// Config configures a Member.
type Config struct {
	Brokers []string
	Topic   string
	Group   string
	// SessionTimeout is how long the group waits for a silent member
	// before moving its partitions to another (default 10s).
	SessionTimeout time.Duration
	// Tick is how often the handler's Advance runs, end offsets are read
	// and offsets committed (default 1s).
	Tick time.Duration
	// Lead is how long before a deadline (Scheduler) the member reads the
	// end offsets once more and advances the handler as soon as they are
	// folded, so that the deadline's own advance has only the events of
	// its last moments to judge, not all since the tick (default 50ms, at
	// most half the tick; negative: none).
	Lead time.Duration
	// StartOffset is where a partition without a committed offset starts:
	// kafka.FirstOffset (default) or kafka.LastOffset.
	StartOffset int64
	Logger      *slog.Logger
	// Now is the clock (default time.Now); tests inject their own.
	Now func() time.Time
}

// Assignment is what one generation of the group gave this member.
type Assignment struct {
	Generation int32
	// Start is, per owned partition, the absolute offset reading starts
	// from: everything before it was handled by an earlier owner.
	Start map[int]int64
	// Partitions is how many partitions the topic has (the handler needs it
	// to compute which partition a key hashes to).
	Partitions int
}

// Owned returns the owned partitions in order.
func (a Assignment) Owned() []int {
	out := make([]int, 0, len(a.Start))
	for p := range a.Start {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// Handler is driven by a Member. All calls come from one goroutine, so the
// handler needs no locking of its own.
type Handler interface {
	// Assign starts a generation: the handler takes over the partitions of
	// a (rebuilding their state) before any of their messages is folded.
	// ctx is cancelled when the group rebalances before Assign returns:
	// the handler then gives up what it took over halfway (the member
	// goes on with the next generation, whose Assign gives the partitions
	// again, maybe others).
	Assign(ctx context.Context, a Assignment) error
	// Fold handles one message of an owned partition. An error stops the
	// member (the message is not committed and will be read again).
	Fold(ctx context.Context, m kafka.Message) error
	// Advance tells the handler the time (now) and the watermark (safe):
	// every message that was in the owned partitions at safe has been
	// folded. When it returns nil, the work for every message folded so far
	// is durable and their offsets are committed. It is not called until
	// the generation has a watermark (safe is never zero), and safe never
	// goes back within a member's life: a new generation's first
	// watermark is later than the last one. ctx is cancelled when the
	// group rebalances: the handler stops publishing and returns (the
	// group's next generation waits for it), and an Advance cut short
	// leaves output that is not durable, which the handler must not take
	// for published in the generations after.
	Advance(ctx context.Context, now, safe time.Time) error
	// Revoke ends the generation: the partitions now belong to others.
	Revoke(ctx context.Context)
}

// Member is one member of the consumer group. Create it with NewMember,
// run it with Run.
type Member struct {
	cfg    Config
	log    *slog.Logger
	client *kafka.Client
	lag    func(partition int, lag int64)
	stage  func(s Stage, d time.Duration)
}

// Stage names one step from a deadline falling due to the handler having
// advanced past it, for OnStage.
type Stage string

// The stages of firing a deadline, in order. Their sum is how late the
// handler's Advance returns after the deadline.
const (
	// StageFire: from the deadline to the member waking for it (the
	// timer's and the scheduler's delay).
	StageFire Stage = "fire"
	// StageEnds: reading the partitions' end offsets from the brokers.
	StageEnds Stage = "ends"
	// StageReach: from the end offsets read to every message before them
	// folded.
	StageReach Stage = "reach"
	// StageAdvance: the handler's Advance (judging and publishing).
	StageAdvance Stage = "advance"
)

// NewMember checks cfg and prepares a member.
func NewMember(cfg Config) (*Member, error) {
	switch {
	case len(cfg.Brokers) == 0:
		return nil, errors.New("stream: no Kafka brokers: set HANDOFF_KAFKA_BROKERS or --kafka-brokers")
	case cfg.Topic == "":
		return nil, errors.New("stream: no topic given")
	case cfg.Group == "":
		return nil, errors.New("stream: no consumer group given")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Lead == 0 {
		cfg.Lead = min(50*time.Millisecond, cfg.Tick/2)
	}
	if cfg.StartOffset == 0 {
		cfg.StartOffset = kafka.FirstOffset
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Member{
		cfg:    cfg,
		log:    log,
		client: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 10 * time.Second},
	}, nil
}

// OnLag sets a function told each partition's lag (messages not folded) at
// every tick, for metrics.
func (m *Member) OnLag(f func(partition int, lag int64)) { m.lag = f }

// OnStage sets a function told how long each stage of firing a deadline
// took (Stage), for metrics: where the time between a deadline and its
// findings goes.
func (m *Member) OnStage(f func(s Stage, d time.Duration)) { m.stage = f }

// Run joins the group and drives h until ctx is done (then it returns nil)
// or the handler fails.
func (m *Member) Run(ctx context.Context, h Handler) error {
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                     m.cfg.Group,
		Brokers:                m.cfg.Brokers,
		Topics:                 []string{m.cfg.Topic},
		SessionTimeout:         m.cfg.SessionTimeout,
		RebalanceTimeout:       m.cfg.SessionTimeout,
		HeartbeatInterval:      m.cfg.SessionTimeout / 5,
		JoinGroupBackoff:       time.Second,
		WatchPartitionChanges:  true,
		PartitionWatchInterval: 5 * time.Second,
		StartOffset:            m.cfg.StartOffset,
	})
	if err != nil {
		return fmt.Errorf("stream: join group %s on %s: %w", m.cfg.Group, m.cfg.Topic, err)
	}
	defer cg.Close()
	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.log.Warn("stream: joining the group failed; retrying", "group", m.cfg.Group, "err", err)
			continue
		}
		if err := m.generation(ctx, gen, h); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

type message struct {
	msg kafka.Message
}

// errGenerationEnded is a handler's Advance cut short by the end of its
// generation: the member goes on with the next one.
var errGenerationEnded = errors.New("stream: the generation ended during an advance")

func (m *Member) generation(ctx context.Context, gen *kafka.Generation, h Handler) (err error) {
	defer func() {
		if errors.Is(err, errGenerationEnded) {
			m.log.Info("stream: the group rebalanced during an advance; it was cut short", "group", m.cfg.Group, "generation", gen.ID)
			err = nil
		}
	}()
	var (
		total int
		start map[int]int64
	)
	for attempt := 0; ; attempt++ {
		var err error
		if total, err = m.partitionCount(ctx); err == nil {
			start, err = m.resolve(ctx, gen.Assignments[m.cfg.Topic])
		}
		if err == nil {
			break
		}
		m.log.Warn("stream: reading the assignment's offsets failed; retrying", "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 5*time.Second)):
		}
	}
	a := Assignment{Generation: gen.ID, Start: start, Partitions: total}
	m.log.Info("stream: partitions assigned", "group", m.cfg.Group, "generation", gen.ID, "partitions", a.Owned())
	// A takeover (reading history back) can take minutes; a member joining
	// meanwhile (the other side of a fault, back) rebalances the group, and
	// the takeover's work for partitions given to that member would be
	// wasted while this member's new partitions wait for it. The
	// generation's end cancels the takeover, and the next generation's
	// assignment is taken over instead (the handler gives up what it had
	// half read). The watcher runs as long as the generation: a function
	// of the generation that returns ends it.
	actx, cancelAssign := context.WithCancel(ctx)
	defer cancelAssign()
	gen.Start(func(gctx context.Context) {
		<-gctx.Done()
		cancelAssign()
	})
	if err := h.Assign(actx, a); err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			m.log.Info("stream: the group rebalanced during the takeover; taking over the next assignment",
				"group", m.cfg.Group, "generation", gen.ID, "partitions", a.Owned(), "err", err)
			return nil
		}
		return fmt.Errorf("stream: take over partitions %v: %w", a.Owned(), err)
	}
	// The group's next generation must not begin while this member may
	// still publish for the partitions it is losing: their next owner
	// restores what was published until it took them over, and a record
	// published after that would be missed, or contradicted by the new
	// owner's own. So the generation's end cuts the handler's Advance short
	// (advCtx), and the function below, which kafka-go waits for before it
	// rejoins the group, returns only once this loop has stopped.
	advCtx, cancelAdvance := context.WithCancel(ctx)
	defer cancelAdvance()
	stopped := make(chan struct{})
	defer close(stopped)
	defer h.Revoke(ctx)

	wm := NewWatermark(start)
	msgs := make(chan message, 1024)
	genDone := make(chan struct{})
	gen.Start(func(gctx context.Context) {
		<-gctx.Done()
		cancelAdvance()
		close(genDone)
		<-stopped
	})
	for p, off := range start {
		gen.Start(func(gctx context.Context) { m.read(gctx, p, off, msgs) })
	}

	committed := make(map[int]int64, len(start))
	for p, o := range start {
		committed[p] = o
	}
	tick := time.NewTicker(m.cfg.Tick)
	defer tick.Stop()
	// due wakes the member when the handler's next deadline falls due
	// (Scheduler), between ticks: the end offsets are read right then, and
	// the handler advances as soon as the folds reach them. No tick bounds
	// how late a deadline fires; an idle member sleeps until one is due.
	sched, _ := h.(Scheduler)
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	// urgent: a snapshot taken at or after the handler's next deadline is
	// pending; the handler advances the moment it is reached.
	urgent := false
	// armed is the deadline the timer was set for; missed, one it woke
	// for while the clock (a test's) had not reached it, which waits for
	// the tick rather than waking the member again and again.
	var lastSnap, armed, missed time.Time
	owned := a.Owned()
	// The end offsets are read by goroutines while the loop keeps folding:
	// events keep arriving during the round trip, and a loop blocked on it
	// would only have more to catch up with once it returns (and a
	// deadline due meanwhile would wait for it). A read is for a deadline
	// (due) or for the tick (due zero); asked is the time the latest read
	// in flight was asked at (zero: none in flight), which covers every
	// deadline up to it.
	type endsRead struct {
		early   bool // the read ahead of the deadline due (Lead)
		due, at time.Time
		ends    map[int]int64
		took    time.Duration
		err     error
	}
	endsC := make(chan endsRead, 4)
	stopReads := make(chan struct{})
	defer close(stopReads)
	var (
		asked    time.Time
		inflight int
		ticking  bool // a tick's read is in flight
	)
	ask := func(early bool, due, now time.Time) {
		inflight++
		if now.After(asked) {
			asked = now
		}
		go func() {
			t0 := time.Now()
			ends, err := m.ends(ctx, owned)
			select {
			case endsC <- endsRead{early: early, due: due, at: now, ends: ends, took: time.Since(t0), err: err}:
			case <-stopReads: // the generation is over
			}
		}()
	}
	// trace follows the deadline being fired through its stages (OnStage):
	// due is the deadline, read when its end offsets were snapshotted.
	var trace struct{ due, read time.Time }
	// early: the timer is set Lead ahead of the deadline armed; rolled is
	// the deadline it was for (once per deadline); eager, the time of the
	// read ahead's snapshot: the handler advances as soon as a snapshot is
	// reached until the safe time is there (older ones may be pending).
	var (
		early         bool
		rolled, eager time.Time
	)
	stage := func(s Stage, d time.Duration) {
		if m.stage != nil {
			m.stage(s, d)
		}
	}
	plan := func() {
		due.Stop()
		urgent, early = false, false
		if sched == nil {
			return
		}
		next := sched.NextDue()
		switch {
		case next.IsZero():
		case !next.After(lastSnap):
			// A snapshot taken since covers it: the handler advances once
			// it is reached (or was advanced past it: nothing to wait for).
			p := wm.Pending()
			urgent = !p.IsZero() && !next.After(p)
		case inflight > 0 && !next.After(asked):
			// A read on its way covers it.
		case next.Equal(missed):
		default:
			now, at := m.cfg.Now(), next
			ahead := next.Add(-m.cfg.Lead)
			// Read ahead unless a snapshot is that recent already.
			early = m.cfg.Lead > 0 && !rolled.Equal(next) && lastSnap.Before(ahead) && now.Before(ahead)
			if early {
				at = ahead
			}
			armed = next
			due.Reset(max(at.Sub(now), 0))
		}
	}
	advance := func(now time.Time, commit bool) error {
		safe := wm.Safe()
		if m.lag != nil && commit {
			for _, l := range wm.Behind() {
				m.lag(l.Partition, l.Lag)
			}
		}
		if safe.IsZero() {
			// Nothing of this generation's partitions is known to be
			// folded yet (a start or a rebalance with a backlog): an
			// Advance would judge as of no evidence, and a commit
			// before the handler's Advance could lose its output.
			plan()
			return nil
		}
		if !safe.Before(eager) {
			eager = time.Time{}
		}
		t0 := time.Now()
		if err := h.Advance(advCtx, now, safe); err != nil {
			if advCtx.Err() != nil && ctx.Err() == nil {
				return fmt.Errorf("%w: %w", errGenerationEnded, err)
			}
			return fmt.Errorf("stream: advance to %s: %w", now.UTC().Format(time.RFC3339), err)
		}
		if !trace.read.IsZero() && !safe.Before(trace.due) {
			stage(StageReach, t0.Sub(trace.read))
			stage(StageAdvance, time.Since(t0))
			trace.due, trace.read = time.Time{}, time.Time{}
		}
		if commit {
			m.commit(gen, wm.Positions(), committed)
		}
		plan()
		return nil
	}
	plan()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-genDone:
			m.log.Info("stream: generation ended", "generation", gen.ID)
			return nil
		case msg := <-msgs:
			// Then what else is waiting, up to a bound (so that a timer
			// due meanwhile is not kept waiting): a receive without the
			// loop's whole select costs a fraction of it, per event.
			for n := 0; ; n++ {
				if err := h.Fold(ctx, msg.msg); err != nil {
					return fmt.Errorf("stream: fold %s[%d]@%d: %w", msg.msg.Topic, msg.msg.Partition, msg.msg.Offset, err)
				}
				wm.Folded(msg.msg.Partition, msg.msg.Offset)
				if (urgent || !eager.IsZero()) && wm.Ready() {
					// Offsets are committed at the next tick: a commit is a
					// round trip, and the deadline's findings are out.
					if err := advance(m.cfg.Now(), false); err != nil {
						return err
					}
					break
				}
				if n == foldRun {
					break
				}
				var more bool
				if msg, more = tryReceive(msgs); !more {
					break
				}
			}
		case <-due.C:
			now := m.cfg.Now()
			if early {
				early, rolled = false, armed
				if !now.Before(armed.Add(-m.cfg.Lead)) {
					ask(true, armed, now)
				}
				plan()
				continue
			}
			if now.Before(armed) {
				missed = armed // the tick tries again
				plan()
				continue
			}
			stage(StageFire, now.Sub(armed))
			ask(false, armed, now)
		case <-tick.C:
			if ticking {
				continue // the brokers are slow: one tick's read at a time
			}
			ticking = true
			ask(false, time.Time{}, m.cfg.Now())
		case r := <-endsC:
			if inflight--; inflight == 0 {
				asked = time.Time{}
			}
			if r.err != nil {
				m.log.Warn("stream: reading end offsets failed; the watermark waits", "err", r.err)
			} else {
				wm.Snapshot(r.at, r.ends)
				if r.at.After(lastSnap) {
					lastSnap = r.at
				}
			}
			if r.early {
				// Judge what came until now, ahead of the deadline.
				if r.err != nil {
					continue
				}
				if wm.Ready() {
					if err := advance(m.cfg.Now(), false); err != nil {
						return err
					}
				} else {
					eager = r.at
				}
				continue
			}
			if r.due.IsZero() {
				// The tick: advance and commit, whether or not the
				// brokers answered (the handler's clock moves on).
				ticking = false
				if err := advance(m.cfg.Now(), true); err != nil {
					return err
				}
				continue
			}
			if r.err != nil {
				missed = r.due // the tick tries again
				plan()
				continue
			}
			stage(StageEnds, r.took)
			trace.due, trace.read = r.due, time.Now()
			if wm.Ready() {
				if err := advance(m.cfg.Now(), false); err != nil {
					return err
				}
			} else {
				plan()
			}
		}
	}
}

// foldRun bounds how many waiting messages the member folds in a row
// before it looks at its timers again (about a millisecond of folds).
const foldRun = 64

// tryReceive returns the next message when one is waiting.
func tryReceive(msgs <-chan message) (message, bool) {
	select {
	case m := <-msgs:
		return m, true
	default:
		return message{}, false
	}
}

// Scheduler is a Handler that knows when its next deadline falls due. The
// member then reads the end offsets right at that time and advances the
// handler as soon as every message produced before it has been folded,
// rather than at the next tick.
type Scheduler interface {
	// NextDue returns the earliest time at which an Advance with that
	// safe time would do something the previous one did not (the zero
	// time when nothing is due). It is asked after every Advance.
	NextDue() time.Time
}

// commit commits the positions that moved. A failure is logged, not fatal:
// the next tick tries again, and a generation that ended cannot commit.
func (m *Member) commit(gen *kafka.Generation, pos, committed map[int]int64) {
	moved := map[int]int64{}
	for p, o := range pos {
		if o > committed[p] {
			moved[p] = o
		}
	}
	if len(moved) == 0 {
		return
	}
	if err := gen.CommitOffsets(map[string]map[int]int64{m.cfg.Topic: moved}); err != nil {
		m.log.Warn("stream: commit failed; retrying at the next tick", "err", err)
		return
	}
	for p, o := range moved {
		committed[p] = o
	}
}

func (m *Member) read(ctx context.Context, partition int, offset int64, out chan<- message) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   m.cfg.Brokers,
		Topic:     m.cfg.Topic,
		Partition: partition,
		MinBytes:  1,
		MaxBytes:  16 << 20,
		MaxWait:   250 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		m.log.Error("stream: set offset", "partition", partition, "offset", offset, "err", err)
		return
	}
	for {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			m.log.Warn("stream: read failed; retrying", "partition", partition, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		select {
		case out <- message{msg: msg}:
		case <-ctx.Done():
			return
		}
	}
}

func (m *Member) partitionCount(ctx context.Context) (int, error) {
	md, err := m.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{m.cfg.Topic}})
	if err != nil {
		return 0, fmt.Errorf("stream: metadata of %s: %w", m.cfg.Topic, err)
	}
	for _, t := range md.Topics {
		if t.Name == m.cfg.Topic {
			if t.Error != nil {
				return 0, fmt.Errorf("stream: metadata of %s: %w", m.cfg.Topic, t.Error)
			}
			return len(t.Partitions), nil
		}
	}
	return 0, fmt.Errorf("stream: topic %s not found", m.cfg.Topic)
}

// resolve turns the generation's start offsets, which may be relative
// (first or last), into absolute ones.
func (m *Member) resolve(ctx context.Context, as []kafka.PartitionAssignment) (map[int]int64, error) {
	out := make(map[int]int64, len(as))
	var reqs []kafka.OffsetRequest
	for _, a := range as {
		switch a.Offset {
		case kafka.FirstOffset:
			reqs = append(reqs, kafka.FirstOffsetOf(a.ID))
		case kafka.LastOffset:
			reqs = append(reqs, kafka.LastOffsetOf(a.ID))
		default:
			out[a.ID] = a.Offset
		}
	}
	if len(reqs) == 0 {
		return out, nil
	}
	res, err := m.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{m.cfg.Topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("stream: list offsets of %s: %w", m.cfg.Topic, err)
	}
	for _, po := range res.Topics[m.cfg.Topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("stream: list offsets of %s[%d]: %w", m.cfg.Topic, po.Partition, po.Error)
		}
		for _, a := range as {
			if a.ID != po.Partition {
				continue
			}
			if a.Offset == kafka.FirstOffset {
				out[a.ID] = po.FirstOffset
			} else {
				out[a.ID] = po.LastOffset
			}
		}
	}
	return out, nil
}

// ends reads the log end offsets of the partitions.
func (m *Member) ends(ctx context.Context, parts []int) (map[int]int64, error) {
	return EndOffsets(ctx, m.client, m.cfg.Topic, parts)
}

// EndOffsets returns the log end offset (the offset the next message will
// get) of each of the partitions of topic.
func EndOffsets(ctx context.Context, c *kafka.Client, topic string, parts []int) (map[int]int64, error) {
	if len(parts) == 0 {
		return map[int]int64{}, nil
	}
	reqs := make([]kafka.OffsetRequest, len(parts))
	for i, p := range parts {
		reqs[i] = kafka.LastOffsetOf(p)
	}
	res, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("stream: end offsets of %s: %w", topic, err)
	}
	out := make(map[int]int64, len(parts))
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("stream: end offset of %s[%d]: %w", topic, po.Partition, po.Error)
		}
		out[po.Partition] = po.LastOffset
	}
	return out, nil
}

// Committed returns the offsets group has committed on the partitions of
// topic (-1 where it has none). The detector uses it to wait until the
// ingester has stored everything it is about to read back.
func Committed(ctx context.Context, c *kafka.Client, group, topic string, parts []int) (map[int]int64, error) {
	res, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return nil, fmt.Errorf("stream: committed offsets of group %s on %s: %w", group, topic, err)
	}
	if res.Error != nil {
		return nil, fmt.Errorf("stream: committed offsets of group %s on %s: %w", group, topic, res.Error)
	}
	out := make(map[int]int64, len(parts))
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("stream: committed offset of group %s on %s[%d]: %w", group, topic, p.Partition, p.Error)
		}
		out[p.Partition] = p.CommittedOffset
	}
	return out, nil
}

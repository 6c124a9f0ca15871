package consumer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// How the ingester reads Kafka: a consumer group (kafka-go's ConsumerGroup)
// assigns partitions, and one fetcher per assigned partition sends Fetch
// requests to the partition's leader (fetchconn.go), decodes each
// response's record batches in place (recordbatch.go) and hands the
// records to the fetch loop in runs. kafka-go's Reader handed every
// message over on its own (a channel send and receive, a read deadline and
// its statistics per message: about a third of the ingester's CPU per
// event), and its Conn.ReadBatch allocated every key and value (12-15%).

// record is one message as the pipeline holds it: its key and value
// (slices of the fetch response it came in, not copied) and where it came
// from.
type record struct {
	key, value []byte
	offset     int64
	partition  int32
	// buf is the response buffer key and value point into, held for this
	// record until it is decoded (unrefRecords); nil for records made
	// without one (tests).
	buf *respBuf
}

// fetched is a run of one partition's records, in offset order, read from
// one fetch response, with the partition's high watermark in that
// response.
type fetched struct {
	partition int
	hwm       int64
	recs      []record
}

// Fetching: the longest a fetch waits on the broker for records (a long
// poll), and how long reading its response may take on top.
const (
	fetchMaxWait     = 2 * time.Second
	fetchReadTimeout = 10 * time.Second
	// fetchMaxBytes is what one fetch asks for of a partition. A
	// response stays in memory while any of its records waits to be
	// decoded (they point into it), within respBudget. At 4 MiB (before
	// the buffers were recycled and bounded) that took the ingester's
	// peak RSS from ~200 to 285-303 MiB, at 1 MiB to 243-260 (512 KiB did
	// no better: 264); at 1 MiB a partition still gets a few thousand
	// records a round trip. The broker returns a first batch larger than
	// this whole (up to the largest message the topics accept,
	// maxFetchResponse).
	fetchMaxBytes = 1 << 20
)

// group is the ingester's membership of the consumer group: the current
// generation (for commits) and the fetchers of its partitions.
type group struct {
	c  *Consumer
	cg *kafka.ConsumerGroup
	// out carries the fetchers' runs to the fetch loop; spare returns
	// their slices.
	out   chan fetched
	spare chan []record
	// bufs holds the fetch responses' buffers.
	bufs *respPool

	mu sync.Mutex
	// gen is the current generation, nil between generations; live is
	// closed while gen is set.
	gen  *kafka.Generation
	live chan struct{}
}

// fetchQueue is how many runs wait for the fetch loop at most (on top of
// the one each fetcher fills): with chunkBytes a run, a few MiB outside
// the in-flight budget.
const fetchQueue = 4

func (c *Consumer) newGroup() (*group, error) {
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                    c.cfg.Group,
		Brokers:               c.cfg.Kafka.Brokers,
		Dialer:                c.dialer,
		Topics:                []string{c.cfg.Kafka.Topic},
		SessionTimeout:        c.cfg.SessionTimeout,
		HeartbeatInterval:     c.cfg.SessionTimeout / 4,
		RebalanceTimeout:      c.cfg.SessionTimeout,
		JoinGroupBackoff:      time.Second,
		StartOffset:           kafka.FirstOffset,
		WatchPartitionChanges: true,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			c.log.Info("kafka consumer group: " + fmt.Sprintf(msg, args...))
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("kafka consumer group %s: %w", c.cfg.Group, err)
	}
	return &group{c: c, cg: cg, out: make(chan fetched, fetchQueue), spare: make(chan []record, fetchQueue+8),
		bufs: newRespPool(), live: make(chan struct{})}, nil
}

// run joins generation after generation until the group is closed, and
// starts a fetcher per assigned partition in each. Fetchers stop fetching
// when fetchCtx ends but stay in the generation until it ends (a fetcher
// returning would end it), so the last flush can still commit.
func (g *group) run(fetchCtx context.Context) {
	c := g.c
	for {
		gen, err := g.cg.Next(context.Background())
		if errors.Is(err, kafka.ErrGroupClosed) {
			return
		}
		if err != nil {
			c.m.Errors.WithLabelValues("fetch").Inc()
			c.log.Warn("kafka consumer group: joining failed; retrying", "group", c.cfg.Group, "brokers", c.cfg.Kafka.Brokers, "err", err)
			continue
		}
		parts := gen.Assignments[c.cfg.Kafka.Topic]
		ids := make([]int, len(parts))
		for i, p := range parts {
			ids[i] = p.ID
		}
		c.log.Info("kafka consumer group: joined", "group", c.cfg.Group, "generation", gen.ID, "partitions", ids)
		c.lag.Assign(map[string][]int{c.cfg.Kafka.Topic: ids})
		g.setGeneration(gen)
		gen.Start(func(gctx context.Context) {
			<-gctx.Done()
			g.endGeneration(gen)
		})
		for _, p := range parts {
			gen.Start(func(gctx context.Context) { g.fetchPartition(gctx, fetchCtx, p.ID, p.Offset) })
		}
	}
}

func (g *group) setGeneration(gen *kafka.Generation) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gen == nil {
		close(g.live)
	}
	g.gen = gen
}

func (g *group) endGeneration(gen *kafka.Generation) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gen == gen {
		g.gen = nil
		g.live = make(chan struct{})
	}
}

// generation returns the current generation, waiting for one until ctx
// ends.
func (g *group) generation(ctx context.Context) (*kafka.Generation, error) {
	for {
		g.mu.Lock()
		gen, live := g.gen, g.live
		g.mu.Unlock()
		if gen != nil {
			return gen, nil
		}
		select {
		case <-live:
		case <-ctx.Done():
			return nil, fmt.Errorf("no generation of consumer group %s to commit in (rejoining the group): %w", g.c.cfg.Group, ctx.Err())
		}
	}
}

// CommitMessages commits each message's offset + 1 (topics.Committer) in
// the current generation. A group accepts a commit of any current member
// for any partition, so messages fetched in an earlier generation are
// committed in the current one; topics.CommitForward keeps such commits
// from moving a partition back.
func (g *group) CommitMessages(ctx context.Context, msgs ...kafka.Message) error {
	gen, err := g.generation(ctx)
	if err != nil {
		return err
	}
	offsets := map[string]map[int]int64{}
	for _, m := range msgs {
		if offsets[m.Topic] == nil {
			offsets[m.Topic] = map[int]int64{}
		}
		offsets[m.Topic][m.Partition] = m.Offset + 1
	}
	if err := gen.CommitOffsets(offsets); err != nil {
		return fmt.Errorf("commit in generation %d of group %s: %w", gen.ID, g.c.cfg.Group, err)
	}
	return nil
}

// close leaves the group: the current generation ends and its fetchers
// return.
func (g *group) close() error { return g.cg.Close() }

// fetchPartition reads partition p from offset (the group's committed
// offset, or kafka.FirstOffset) until the generation ends or fetchCtx does,
// reconnecting with backoff after an error. It returns only when the
// generation has ended.
func (g *group) fetchPartition(gctx, fetchCtx context.Context, p int, offset int64) {
	c := g.c
	ctx, cancel := context.WithCancel(gctx)
	stop := context.AfterFunc(fetchCtx, cancel)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		next, err := g.readPartition(ctx, p, offset)
		if ctx.Err() != nil {
			break
		}
		if next != offset {
			backoff = 100 * time.Millisecond
		}
		offset = next
		c.m.Errors.WithLabelValues("fetch").Inc()
		c.log.Warn("kafka fetch failed; retrying", "topic", c.cfg.Kafka.Topic, "partition", p, "offset", offset, "err", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(backoff*2, c.cfg.RetryMax)
	}
	stop()
	cancel()
	<-gctx.Done()
}

// readPartition connects to p's leader and reads from offset until an
// error or ctx ends; it returns the offset to read from next. kafka-go's
// connection finds the offsets; the records come over a connection of
// their own (fetchConn), decoded in place.
func (g *group) readPartition(ctx context.Context, p int, offset int64) (int64, error) {
	c := g.c
	conn, err := g.dialLeader(ctx, p)
	if err != nil {
		return offset, err
	}
	defer conn.Close()
	fc, err := g.dialFetch(ctx, conn, p)
	if err != nil {
		return offset, err
	}
	defer fc.Close()
	// A fetch blocks on the broker for up to fetchMaxWait: closing the
	// connections wakes it when the generation or the fetching ends.
	unblock := context.AfterFunc(ctx, func() {
		conn.Close()
		fc.Close()
	})
	defer unblock()
	if offset, err = g.seek(conn, p, offset); err != nil {
		return offset, err
	}
	var recs []record
	// want is what the partition's next response is expected to take of
	// the response budget: what its last one took.
	want := int64(fetchMaxBytes)
	for {
		// Wait for room for a response before asking for one (the
		// decode workers are behind), not with a fetch outstanding.
		if !g.bufs.reserve(ctx, want) {
			return offset, ctx.Err()
		}
		res, err := fc.fetch(g.bufs, want, c.cfg.Kafka.Topic, int32(p), offset, fetchMaxWait, fetchMaxBytes, time.Now().Add(fetchMaxWait+fetchReadTimeout))
		if err == nil {
			want = res.buf.cost
			recs, offset, err = g.handOver(ctx, recs[:0], res, p, offset)
			res.buf.unref(1)
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return offset, err
		case errors.Is(err, kafka.OffsetOutOfRange):
			// Retention deleted what this partition was to be read from
			// (or the offset is past the end): start again from what is
			// there.
			next, serr := g.seek(conn, p, offset)
			if serr != nil {
				return offset, errors.Join(err, serr)
			}
			if next == offset {
				return offset, err
			}
			c.log.Warn("kafka partition: the offset to read is out of range; reading from the first available", "topic", c.cfg.Kafka.Topic,
				"partition", p, "from", offset, "to", next)
			offset = next
		default:
			return offset, err
		}
	}
}

// dialFetch opens the fetch connection to the broker conn is connected to
// (p's leader).
func (g *group) dialFetch(ctx context.Context, conn *kafka.Conn, p int) (*fetchConn, error) {
	addr := conn.RemoteAddr().String()
	d := net.Dialer{Timeout: g.c.dialer.Timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s, the leader of %s/%d: %w", addr, g.c.cfg.Kafka.Topic, p, err)
	}
	return newFetchConn(nc), nil
}

// seek resolves offset (kafka.FirstOffset, or an offset that may be before
// the partition's first) to the first offset to read, with conn's
// ListOffsets.
func (g *group) seek(conn *kafka.Conn, p int, offset int64) (int64, error) {
	conn.SetDeadline(time.Now().Add(fetchReadTimeout))
	defer conn.SetDeadline(time.Time{})
	first, last, err := conn.ReadOffsets()
	if err != nil {
		return offset, fmt.Errorf("read the offsets of %s/%d: %w", g.c.cfg.Kafka.Topic, p, err)
	}
	switch {
	case offset == kafka.FirstOffset || offset < first:
		offset = first
	case offset == kafka.LastOffset || offset > last:
		offset = last
	}
	return offset, nil
}

// dialLeader connects to the leader of partition p, asking each broker in
// turn.
func (g *group) dialLeader(ctx context.Context, p int) (*kafka.Conn, error) {
	var errs []error
	for _, b := range g.c.cfg.Kafka.Brokers {
		conn, err := g.c.dialer.DialLeader(ctx, "tcp", b, g.c.cfg.Kafka.Topic, p)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("connect to the leader of %s/%d: %w", g.c.cfg.Kafka.Topic, p, errors.Join(errs...))
}

// handOver decodes one fetch response of partition p (res, asked from
// offset) into recs and hands its records to the fetch loop in runs of up
// to chunkSize records or chunkBytes. It returns recs (for the next
// response) and the offset to read from next: past the response's last
// complete batch, or after the last record handed over when ctx ended
// first (a run not handed over is read again by whoever reads the
// partition next).
func (g *group) handOver(ctx context.Context, recs []record, res fetchResult, p int, offset int64) ([]record, int64, error) {
	recs, next, err := appendRecords(recs, res.records, int32(p), offset)
	if err != nil {
		// The records before the bad batch are good: hand them over, and
		// fail at the batch (the fetch is retried from there).
		next = offset
		if len(recs) > 0 {
			next = recs[len(recs)-1].offset + 1
		}
		err = fmt.Errorf("%s/%d from offset %d: %w", g.c.cfg.Kafka.Topic, p, next, err)
	}
	for lo := 0; lo < len(recs); {
		hi, bytes := lo, 0
		for hi < len(recs) && hi-lo < chunkSize && bytes < chunkBytes {
			bytes += len(recs[hi].key) + len(recs[hi].value)
			hi++
		}
		var run []record
		select {
		case run = <-g.spare:
		default:
			run = make([]record, 0, chunkSize)
		}
		run = append(run, recs[lo:hi]...)
		if res.buf != nil {
			// Each record handed over holds the response until it is
			// decoded; the caller's own hold keeps it until then.
			for i := range run {
				run[i].buf = res.buf
			}
			res.buf.refs.Add(int64(len(run)))
		}
		select {
		case g.out <- fetched{partition: p, hwm: res.hwm, recs: run}:
			// From recs: run belongs to the fetch loop now, which recycles
			// it (and another fetcher may fill it) once it has read it.
			offset = recs[hi-1].offset + 1
		case <-ctx.Done():
			if res.buf != nil {
				res.buf.refs.Add(-int64(len(run)))
			}
			return recs, offset, ctx.Err()
		}
		lo = hi
	}
	clear(recs) // the runs hold the records; recs must not keep the response
	return recs, max(offset, next), err
}

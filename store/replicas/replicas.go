// Package replicas gives reads on a replicated ClickHouse cluster what a
// single server gives for free: every write ClickHouse acknowledged is
// there to read.
//
// Why: handoff ingest writes through the Distributed tables with
// insert_distributed_sync=1, which returns once one replica of each shard
// has the rows; the other replica fetches them later, seconds later under
// load. A read through a Distributed table picks any replica of each shard,
// so it may miss rows that were acknowledged long ago. For dashboards that
// is a second of staleness; for the streaming detector, which waits until
// ingest has committed what it is about to read back, it is wrong: a
// detector taking over partitions read a batch's history from the replica
// that was behind, saw no events, and resolved findings that were still
// open (found by the local cluster's ingester-and-detector kill test).
//
// Set.Each makes such a read exact: for every shard it runs SYSTEM SYNC
// REPLICA on its replicas (all at once; the first to finish is used),
// which returns once that replica has fetched every part recorded in the
// shard's replication log when it was called (a part is in the log before
// its insert is acknowledged), and then reads that replica's local tables
// directly. A shard whose replicas are all down, or
// whose only copy of a part is on a replica that is down, fails the read:
// the caller retries, it does not read around the hole.
package replicas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
)

// DefaultSyncTimeout bounds the synchronisation of a shard: how long Each
// waits for the first of its replicas to finish SYSTEM SYNC REPLICA.
const DefaultSyncTimeout = 2 * time.Minute

// Shard is one shard of a cluster: its number and its replicas' native
// protocol addresses (host:port), in the cluster's order.
type Shard struct {
	Num      int
	Replicas []string
}

// Shards reads the shards of cluster from system.clusters over conn (any
// server of the cluster). The addresses are the host names and ports of
// the cluster's <remote_servers> definition: the servers' names for each
// other, which clients must be able to reach too.
func Shards(ctx context.Context, conn driver.Conn, cluster string) ([]Shard, error) {
	rows, err := conn.Query(ctx, "SELECT shard_num, host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", cluster)
	if err != nil {
		return nil, fmt.Errorf("replicas: read the servers of cluster %s from system.clusters: %w", cluster, err)
	}
	defer rows.Close()
	var out []Shard
	for rows.Next() {
		var (
			num  uint32
			host string
			port uint16
		)
		if err := rows.Scan(&num, &host, &port); err != nil {
			return nil, fmt.Errorf("replicas: read the servers of cluster %s: %w", cluster, err)
		}
		if len(out) == 0 || out[len(out)-1].Num != int(num) {
			out = append(out, Shard{Num: int(num)})
		}
		s := &out[len(out)-1]
		s.Replicas = append(s.Replicas, net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("replicas: read the servers of cluster %s: %w", cluster, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("replicas: cluster %s is not in system.clusters of the server handoff is connected to: check HANDOFF_CLICKHOUSE_CLUSTER against its <remote_servers>", cluster)
	}
	return out, nil
}

// Set reads a cluster's shards through synchronised replicas. Create it
// with New; it keeps one connection per server it has used, released by
// Close. It is safe for concurrent use.
type Set struct {
	conn    driver.Conn // any server: where system.clusters is read
	cfg     chconn.Config
	cluster string
	db      string
	log     *slog.Logger
	// SyncTimeout bounds one SYSTEM SYNC REPLICA (default
	// DefaultSyncTimeout).
	SyncTimeout time.Duration

	mu       sync.Mutex
	conns    map[string]driver.Conn
	syncs    map[string]syncState // by shard and tables
	layout   []Shard
	shardsAt time.Time
}

// New returns a Set for database db of cluster, reading the cluster's
// layout over conn. cfg is how to connect to each server (its Addr is
// replaced by the server's address; user, password and timeouts are
// kept).
func New(conn driver.Conn, cfg chconn.Config, cluster, db string, log *slog.Logger) (*Set, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return nil, err
	}
	if err := (schema.Layout{Cluster: cluster}).Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Set{conn: conn, cfg: cfg, cluster: cluster, db: db, log: log, conns: map[string]driver.Conn{}, syncs: map[string]syncState{}}, nil
}

// Close closes the connections to the servers.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for addr, c := range s.conns {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("replicas: close %s: %w", addr, err))
		}
	}
	clear(s.conns)
	return errors.Join(errs...)
}

// Each calls read once per shard with a connection to a replica of that
// shard which has been synchronised (SYSTEM SYNC REPLICA) on every table
// of tables (names without the _local suffix, e.g. schema.Events) by a
// synchronisation that started at or after since; read must select from
// the local tables (store/history's Store.Local). A synchronisation covers
// every write acknowledged before it started, so since is the time after
// which the writes the caller needs were acknowledged: time.Now() when
// they were just committed, earlier when older writes are enough (one
// synchronisation then serves many reads). The shards are read one after
// the other, each shard's rows complete. When a new synchronisation is
// needed every replica of the shard is asked at once and the first to
// finish is read: a replica that is down or still catching up after a
// restart (minutes, under load) does not hold the read up. A shard with no
// replica synchronised within SyncTimeout fails Each with the reasons.
func (s *Set) Each(ctx context.Context, tables []string, since time.Time, read func(ctx context.Context, conn driver.Conn) error) error {
	shards, err := s.shards(ctx)
	if err != nil {
		return err
	}
	for _, sh := range shards {
		conn, err := s.synced(ctx, sh, tables, since)
		if err != nil {
			return err
		}
		if err := read(ctx, conn); err != nil {
			return err
		}
	}
	return nil
}

// shardsTTL is how long the cluster's layout is reused before
// system.clusters is read again.
const shardsTTL = 30 * time.Second

func (s *Set) shards(ctx context.Context) ([]Shard, error) {
	s.mu.Lock()
	if time.Since(s.shardsAt) < shardsTTL {
		defer s.mu.Unlock()
		return s.layout, nil
	}
	s.mu.Unlock()
	shards, err := Shards(ctx, s.conn, s.cluster)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.layout, s.shardsAt = shards, time.Now()
	s.mu.Unlock()
	return shards, nil
}

// syncState is the last synchronisation of a shard's replica.
type syncState struct {
	addr    string
	started time.Time
}

// synced returns a connection to a replica of sh synchronised on every
// table by a synchronisation that started at or after since.
func (s *Set) synced(ctx context.Context, sh Shard, tables []string, since time.Time) (driver.Conn, error) {
	key := fmt.Sprint(sh.Num, tables)
	s.mu.Lock()
	last, ok := s.syncs[key]
	s.mu.Unlock()
	if ok && !last.started.Before(since) {
		if conn, err := s.dial(ctx, last.addr); err == nil {
			return conn, nil
		}
	}
	started := time.Now()
	timeout := s.SyncTimeout
	if timeout <= 0 {
		timeout = DefaultSyncTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel() // the slower replicas' synchronisations are abandoned
	type result struct {
		addr string
		conn driver.Conn
		err  error
	}
	results := make(chan result, len(sh.Replicas))
	for _, addr := range sh.Replicas {
		go func() {
			conn, err := s.dial(rctx, addr)
			if err == nil {
				err = s.sync(rctx, conn, tables)
			}
			results <- result{addr, conn, err}
		}()
	}
	var errs []error
	for range sh.Replicas {
		r := <-results
		if r.err == nil {
			s.mu.Lock()
			s.syncs[key] = syncState{addr: r.addr, started: started}
			s.mu.Unlock()
			return r.conn, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", r.addr, r.err))
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.log.Warn("replicas: no replica of a shard synchronised for a complete read", "shard", sh.Num, "err", errors.Join(errs...))
	return nil, fmt.Errorf("replicas: no replica of shard %d of cluster %s synchronised within %s for a complete read (%w); is one of them up, and are the replicas of %s catching up? (system.replicas, system.replication_queue)",
		sh.Num, s.cluster, timeout, errors.Join(errs...), s.db)
}

func (s *Set) sync(ctx context.Context, conn driver.Conn, tables []string) error {
	for _, t := range tables {
		if err := conn.Exec(ctx, "SYSTEM SYNC REPLICA "+s.db+"."+t+schema.LocalSuffix); err != nil {
			return fmt.Errorf("SYSTEM SYNC REPLICA %s.%s%s: %w", s.db, t, schema.LocalSuffix, err)
		}
	}
	return nil
}

func (s *Set) dial(ctx context.Context, addr string) (driver.Conn, error) {
	s.mu.Lock()
	c, ok := s.conns[addr]
	s.mu.Unlock()
	if ok {
		if err := c.Ping(ctx); err == nil {
			return c, nil
		}
		// Down, or restarted: connect again (the pool may hold dead
		// connections).
		s.mu.Lock()
		if s.conns[addr] == c {
			delete(s.conns, addr)
		}
		s.mu.Unlock()
		c.Close()
	}
	cfg := s.cfg
	cfg.Addr = addr
	cfg.Settings = nil // the ingester's insert settings are not for reads
	c, err := chconn.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.conns[addr]; ok {
		c.Close()
		return old, nil
	}
	s.conns[addr] = c
	return c, nil
}

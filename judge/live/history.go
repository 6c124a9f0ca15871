package live

import (
	"context"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/replicas"
	"github.com/handoff-dev/handoff/store/schema"
)

// ClusterHistory is the History of a detector on a ClickHouse cluster: it
// reads each shard through a replica synchronised just before
// (store/replicas), so that what handoff ingest has committed is all
// there. A read through the Distributed tables may land on a replica that
// has not fetched those rows yet; a detector that took over partitions
// then judged batches without their events.
type ClusterHistory struct {
	Replicas *replicas.Set
	Store    *history.Store // its Local view is used on each replica
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// reopenedFresh is how recent a synchronisation must be for BatchEvents:
// a reopened batch's earlier events were folded, judged and stored before
// the batch was closed, so any synchronisation of the last seconds covers
// them, and one serves every batch reopened meanwhile (they come by the
// thousand after a backlog) instead of one per batch.
const reopenedFresh = 30 * time.Second

func (h ClusterHistory) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

var _ History = ClusterHistory{}

// PartitionEvents reads the partitions' events shard by shard.
func (h ClusterHistory) PartitionEvents(ctx context.Context, topic string, partitions []int, from model.Date, fn func(*model.Event) error) error {
	// Strict: the wiring has just waited for ingest's commits.
	return h.Replicas.Each(ctx, []string{schema.Events}, h.now(), func(ctx context.Context, conn chconn.Conn) error {
		return h.Store.Local(conn).PartitionEvents(ctx, topic, partitions, from, fn)
	})
}

// BatchEvents reads one batch's events (from the shard that holds them;
// the others return none).
func (h ClusterHistory) BatchEvents(ctx context.Context, key model.BatchKey, fn func(*model.Event) error) error {
	return h.Replicas.Each(ctx, []string{schema.Events}, h.now().Add(-reopenedFresh), func(ctx context.Context, conn chconn.Conn) error {
		return h.Store.Local(conn).BatchEvents(ctx, key, fn)
	})
}

// Findings reads the latest record of each finding, shard by shard (a
// finding's records are all on its batch's shard).
func (h ClusterHistory) Findings(ctx context.Context, from model.Date, ps history.EventsPartitions, keep func(model.BatchKey) bool, fn func(*detect.Finding) error) error {
	return h.Replicas.Each(ctx, []string{schema.Findings}, h.now(), func(ctx context.Context, conn chconn.Conn) error {
		return h.Store.Local(conn).Findings(ctx, from, ps, keep, fn)
	})
}

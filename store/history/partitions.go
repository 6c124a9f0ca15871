package history

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// PartitionEvents streams every stored event that was read from the given
// partitions of topic: batch events with a business date on or after from;
// heartbeats whose time is on or after from (UTC), and before them the
// latest heartbeat of each process stamped earlier, however old (the
// history a batch needs, context.go: a process that last beat before the
// retention window is still named in alive, as diagnose names it). The
// streaming detector reads back the history of the partitions it is
// assigned with it. Order: those latest heartbeats, heartbeats by day,
// then batch events by business date, batch id and event id; each event
// once (copies not yet merged are skipped).
func (s *Store) PartitionEvents(ctx context.Context, topic string, partitions []int, from model.Date, fn func(*model.Event) error) error {
	if len(partitions) == 0 {
		return nil
	}
	ps := make([]string, len(partitions))
	for i, p := range partitions {
		if p < 0 {
			return fmt.Errorf("store: partition %d: want 0 or more", p)
		}
		ps[i] = strconv.Itoa(p) // integers, never request text
	}
	in := "kafka_partition IN (" + strings.Join(ps, ", ") + ")"
	var prev rowKey
	each := func(e *model.Event) error { c := *e; return fn(&c) } // fn may keep its event

	old := &where{}
	old.add("kafka_topic = ?", topic)
	old.add(in)
	old.add("business_date = toDate('1970-01-01')")
	old.add("batch_id = ''")
	old.add("type = 'process.heartbeat'")
	old.add("time_ms < ?", from.In(time.UTC).UnixMilli())
	before, err := s.latestHeartbeats(ctx, old)
	if err != nil {
		return err
	}
	for i := range before {
		if err := fn(&before[i]); err != nil {
			return err
		}
	}

	hb := &where{}
	hb.add("kafka_topic = ?", topic)
	hb.add(in)
	hb.add("batch_id = ''")
	hb.add("type = 'process.heartbeat'")
	hb.add("time_ms >= ?", from.In(time.UTC).UnixMilli())
	qs, err := s.windowed(ctx, hb, "event_date")
	if err != nil {
		return err
	}
	ev := &where{}
	ev.add("kafka_topic = ?", topic)
	ev.add(in)
	ev.add("batch_id != ''")
	ev.add("business_date >= toDate(?)", from.String())
	more, err := s.windowed(ctx, ev, "business_date")
	if err != nil {
		return err
	}
	for _, q := range append(qs, more...) {
		if err := s.each(ctx, q, &prev, each); err != nil {
			return err
		}
	}
	return nil
}

// BatchEvents streams the stored events of one batch.
func (s *Store) BatchEvents(ctx context.Context, key model.BatchKey, fn func(*model.Event) error) error {
	return s.EachEvent(ctx, Filter{Batch: &key}, func(e model.Event) error { return fn(&e) })
}

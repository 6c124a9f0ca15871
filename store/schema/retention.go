package schema

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Retention of old history (docs/cluster.md, "Retention"). ClickHouse 18.16
// has no TTL, and a TTL clause that current releases would accept is a
// syntax error there, so the schema has none on any server: old history is
// removed by dropping whole monthly partitions, which works on every
// release, costs no merge, and in the cluster flavour runs ON CLUSTER on the
// local tables.

// heartbeatPartition holds the heartbeats (business_date 1970-01-01): it
// is the oldest month but current data, so retention never drops it.
const heartbeatPartition = "197001"

// RetentionCutoff returns the first month to keep when months whole months
// before now's are kept: partitions before it are dropped.
func RetentionCutoff(now time.Time, months int) time.Time {
	y, m, _ := now.UTC().Date()
	return time.Date(y, m-time.Month(months), 1, 0, 0, 0, 0, time.UTC)
}

// DropPartitionsBefore drops the monthly partitions of every table that
// hold only months before the month of cutoff (events, diagnoses and
// findings by business date, dead letters by the time they were received),
// and returns them as "table/partition". Dropping is idempotent: run it
// from every ingester as often as wanted.
func DropPartitionsBefore(ctx context.Context, conn driver.Conn, db string, l Layout, cutoff time.Time) ([]string, error) {
	if err := CheckDatabase(db); err != nil {
		return nil, err
	}
	if err := l.Check(); err != nil {
		return nil, err
	}
	tables := []string{Events, EventsByDate, DeadLetters, Diagnoses, Findings}
	parts, on := "system.parts", ""
	if l.Clustered() {
		for i := range tables {
			tables[i] += LocalSuffix
		}
		// one replica of every shard: replicas hold the same partitions
		parts, on = "cluster("+l.Cluster+", system, parts)", " ON CLUSTER "+l.Cluster
	}
	before := cutoff.UTC().Year()*100 + int(cutoff.UTC().Month())
	rows, err := conn.Query(ctx, "SELECT DISTINCT table, partition FROM "+parts+
		" WHERE database = ? AND has(?, table) AND active AND partition != ? ORDER BY table, partition", db, tables, heartbeatPartition)
	if err != nil {
		return nil, fmt.Errorf("retention: list the partitions of %s: %w", db, err)
	}
	type part struct{ table, id string }
	var old []part
	for rows.Next() {
		var p part
		if err := rows.Scan(&p.table, &p.id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("retention: list the partitions of %s: %w", db, err)
		}
		if n, err := strconv.Atoi(p.id); err == nil && n < before {
			old = append(old, p)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("retention: list the partitions of %s: %w", db, err)
	}
	var dropped []string
	for _, p := range old {
		if err := conn.Exec(ctx, "ALTER TABLE "+db+"."+p.table+on+" DROP PARTITION "+p.id); err != nil {
			return dropped, fmt.Errorf("retention: drop partition %s of %s.%s: %w (check that the user may ALTER the table)", p.id, db, p.table, err)
		}
		dropped = append(dropped, p.table+"/"+p.id)
	}
	return dropped, nil
}

package schema

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// The copy of the batch events sorted by business date first
// (events_by_date, schema.sql says why). ClickHouse keeps it: the
// materialized view events_by_date_mv runs on every block inserted into
// events (in the cluster flavour into events_local, on the server that
// takes the shard's insert, whose replicated copy then reaches the other
// replicas), so no writer changes and no block can reach one table and not
// the other through handoff. The rows stored before the view existed are
// copied once by Ensure, when it creates the view (copyByDate): a row
// inserted meanwhile is in both the view's block and the copy, and its two
// copies collapse as any other.

// EventsByDateColumns are the columns of events_by_date the view and the
// first copy fill, in the table's order.
const EventsByDateColumns = "business_date, pipeline, batch_id, event_id, type, time_ms, system, component, object, " +
	"rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error, ingested_ms"

// byDateViewStatement is the CREATE MATERIALIZED VIEW of events_by_date in
// database db and layout l: TO the table (local parts in the cluster
// flavour), from events, batch events only.
func byDateViewStatement(db string, l Layout) string {
	from, to, on := db+"."+Events, db+"."+EventsByDate, ""
	if l.Clustered() {
		from, to, on = from+LocalSuffix, to+LocalSuffix, " ON CLUSTER "+l.Cluster
	}
	return "CREATE MATERIALIZED VIEW IF NOT EXISTS " + db + "." + EventsByDateView + on + " TO " + to +
		" AS SELECT " + EventsByDateColumns + " FROM " + from + " WHERE batch_id != ''"
}

// hasByDateCopied reports whether database db has the mark that the first
// copy into events_by_date completed (EventsByDateCopied).
func hasByDateCopied(ctx context.Context, conn driver.Conn, db string) (bool, error) {
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", db, EventsByDateCopied).Scan(&n); err != nil {
		return false, fmt.Errorf("clickhouse schema: look for %s.%s: %w", db, EventsByDateCopied, err)
	}
	return n > 0, nil
}

// byDateCopiedStatement creates the mark that the first copy completed: an
// empty table, whose existence is the whole message (on every server in
// the cluster flavour, as each reader asks its own).
func byDateCopiedStatement(db string, l Layout) string {
	on := ""
	if l.Clustered() {
		on = " ON CLUSTER " + l.Cluster
	}
	return "CREATE TABLE IF NOT EXISTS " + db + "." + EventsByDateCopied + on + " (copied UInt8) ENGINE = TinyLog"
}

// copyByDate copies into events_by_date the batch events stored in
// events, after Ensure created the view: the history stored before the
// view existed (through the Distributed tables in the cluster flavour,
// each row to its batch's shard), then marks the copy done
// (EventsByDateCopied). It reads every row of events once; a database
// created empty copies nothing. A copy cut short (a crash, a timeout)
// leaves no mark, so the next Ensure copies everything again: the rows
// copied twice, and those the view copied meanwhile, collapse as any
// other copies of an event, and readers use events_by_date only once
// the mark exists (history.Store.HasByDate).
func copyByDate(ctx context.Context, conn driver.Conn, db string, l Layout) error {
	if err := conn.Exec(ctx, "INSERT INTO "+db+"."+EventsByDate+" ("+EventsByDateColumns+") SELECT "+EventsByDateColumns+
		" FROM "+db+"."+Events+" WHERE batch_id != ''"); err != nil {
		return fmt.Errorf("clickhouse schema: copy the stored events of %s into %s (the next start copies again; until then readers use %s): %w",
			db, EventsByDate, Events, err)
	}
	if err := conn.Exec(ctx, byDateCopiedStatement(db, l)); err != nil {
		return fmt.Errorf("clickhouse schema: mark the copy into %s.%s done (the next start copies again): %w", db, EventsByDate, err)
	}
	return nil
}

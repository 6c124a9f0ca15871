// Command chload stores a JSON-lines file of delivery events straight into
// a ClickHouse database through store/writer (the rows `handoff ingest`
// writes, without Kafka), for deploy/bench/backfill.sh: the backfill reads
// what is stored, so loading only has to be fast, not realistic.
//
//	go run ./deploy/bench/chload -in .data/bench/events.jsonl -addr 127.0.0.1:19000 -database handoff_bench_x
//
// The schema is created when missing. Invalid lines are skipped and
// counted; a repeated event_id is stored again (as an at-least-once
// ingester may: the copies are what reads skip until merges collapse them).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

func main() {
	var (
		in    = flag.String("in", "", "JSON-lines event file (required)")
		addr  = flag.String("addr", os.Getenv("HANDOFF_CLICKHOUSE_ADDR"), "ClickHouse native host:port (HANDOFF_CLICKHOUSE_ADDR)")
		db    = flag.String("database", "", "database to fill (required)")
		batch = flag.Int("batch", 200_000, "rows per INSERT")
	)
	flag.Parse()
	if *in == "" || *db == "" || *addr == "" {
		fatal(fmt.Errorf("-in, -database and -addr (or HANDOFF_CLICKHOUSE_ADDR) are required"))
	}
	ctx := context.Background()
	conn, err := chconn.Open(ctx, chconn.Config{Addr: *addr})
	if err != nil {
		fatal(err)
	}
	defer conn.Close()
	if err := schema.Ensure(ctx, conn, *db); err != nil {
		fatal(err)
	}
	sk, err := writer.New(conn, *db)
	if err != nil {
		fatal(err)
	}
	f, err := os.Open(*in)
	if err != nil {
		fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), model.MaxEventSize+1024)
	var (
		dec         model.Decoder
		b           schema.EventBatch
		stored, bad int
		started     = time.Now()
		now         = started.UnixMilli()
	)
	flush := func() {
		if b.Len() == 0 {
			return
		}
		if err := sk.InsertEvents(ctx, &b); err != nil {
			fatal(err)
		}
		stored += b.Len()
		b.Reset()
	}
	for sc.Scan() {
		e, err := dec.Decode(sc.Bytes())
		if err != nil {
			bad++
			continue
		}
		b.Add(&e, schema.Source{Topic: "chload"}, now)
		if b.Len() >= *batch {
			flush()
		}
	}
	if err := sc.Err(); err != nil {
		fatal(err)
	}
	flush()
	fmt.Fprintf(os.Stderr, "chload: %d rows stored into %s.events in %.1fs, %d bad lines skipped\n", stored, *db, time.Since(started).Seconds(), bad)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "chload:", err)
	os.Exit(1)
}

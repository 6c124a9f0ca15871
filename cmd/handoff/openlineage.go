package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/ingest/emit"
	olin "github.com/handoff-dev/handoff/ingest/lineage"
	"github.com/handoff-dev/handoff/model"
	ol "github.com/handoff-dev/handoff/model/openlineage"
)

// runOpenLineage is `handoff openlineage`: OpenLineage run events in, from
// a Kafka topic or a file, mapped through the contracts to handoff events.
func runOpenLineage(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var ev emitEnv
	if err := env.Parse(&ev); err != nil {
		return usageError("environment: %v", err)
	}
	fs := flag.NewFlagSet("handoff openlineage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "", "read run events from this file of JSON lines (- for standard input) instead of Kafka")
	contracts := fs.String("contract", envOr("HANDOFF_CONTRACTS", ""), "contract file or directory; contracts with an openlineage block claim jobs (required; env HANDOFF_CONTRACTS)")
	brokers := fs.String("kafka-brokers", strings.Join(ev.Brokers, ","), "Kafka brokers, host:port[,...] (env HANDOFF_KAFKA_BROKERS)")
	olTopic := fs.String("openlineage-topic", olin.DefaultTopic, "the topic OpenLineage's Kafka transport writes to")
	group := fs.String("group", olin.DefaultGroup, "consumer group of the OpenLineage topic")
	topic := fs.String("topic", ev.Topic, "events topic the mapped events go to (env HANDOFF_TOPIC)")
	dlq := fs.String("dlq-topic", envOr("HANDOFF_DLQ_TOPIC", "handoff.events.dlq"), "dead-letter topic of invalid run events (env HANDOFF_DLQ_TOPIC)")
	timeout := fs.Duration("timeout", ev.Timeout, "how long Kafka may take to acknowledge (env HANDOFF_EMIT_TIMEOUT)")
	print := fs.Bool("print", false, "with --file: print the mapped events as JSON lines instead of sending them")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff openlineage --contract FILE|DIR --kafka-brokers B [--openlineage-topic T]")
		fmt.Fprintln(stderr, "       handoff openlineage --contract FILE|DIR --file FILE|- [--print | --kafka-brokers B]")
		fmt.Fprintln(stderr, "\nMaps OpenLineage run events (START/COMPLETE/FAIL/ABORT, output statistics) to handoff events through the")
		fmt.Fprintln(stderr, "contracts' openlineage blocks. From Kafka it runs until stopped; invalid run events go to the dead-letter")
		fmt.Fprintln(stderr, "topic. Exit status: 0 done, 1 (--file) some lines could not be mapped, 2 bad usage, 3 failure.")
		fmt.Fprintln(stderr, "See docs/openlineage.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *contracts == "" {
		return usageError("--contract is required: contracts say which jobs are which pipelines' and how runs map to batches")
	}
	set, err := loadContracts(*contracts)
	if err != nil {
		return err
	}
	claimed := 0
	for _, p := range set.Pipelines() {
		if set.For(p).OpenLineage != nil {
			claimed++
		}
	}
	if claimed == 0 {
		return usageError("--contract %s: no contract has an openlineage block, so no job maps to a pipeline", *contracts)
	}
	if err := ol.CheckClaims(set); err != nil {
		return usageError("--contract %s: %v", *contracts, err)
	}
	var em *emit.Emitter
	if *brokers != "" && !*print {
		em, err = emit.New(emit.Config{Brokers: strings.Split(*brokers, ","), Topic: *topic, Timeout: *timeout, CreateTopic: true, Partitions: ev.Partitions})
		if err != nil {
			return usageError("%v", err)
		}
		defer em.Close()
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if *file == "" {
		if em == nil {
			return usageError("--kafka-brokers is required to read the OpenLineage topic (or give --file)")
		}
		b, err := olin.NewBridge(olin.Config{Brokers: strings.Split(*brokers, ","), Topic: *olTopic, Group: *group, DLQTopic: *dlq, Partitions: ev.Partitions, Log: log}, set, em)
		if err != nil {
			return usageError("%v", err)
		}
		err = b.Run(ctx)
		st := b.Stats()
		log.Info("openlineage: stopped", "read", st.Read, "mapped_events", st.Mapped, "rejected", st.Rejected, "unmapped_jobs", st.Unmapped, "proving_nothing", st.Nothing)
		return err
	}
	if em == nil && !*print {
		return usageError("--file needs --print or --kafka-brokers: say where the mapped events go")
	}
	var r io.Reader = stdin
	name := "stdin"
	if *file != "-" {
		f, err := os.Open(*file)
		if err != nil {
			return usageError("--file: %v", err)
		}
		defer f.Close()
		r, name = f, *file
	}
	out := bufio.NewWriter(stdout)
	yield := func(events []model.Event) error {
		if em != nil {
			return em.Send(ctx, events)
		}
		for i := range events {
			if _, err := out.Write(append(events[i].AppendJSON(nil), '\n')); err != nil {
				return writing(err)
			}
		}
		return nil
	}
	st, err := olin.Lines(ctx, r, set, yield, func(line int, err error) { fmt.Fprintf(stderr, "%s:%d: %v\n", name, line, err) })
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = writing(ferr)
	}
	fmt.Fprintf(stderr, "openlineage: %d run events read, %d handoff events mapped, %d rejected, %d of jobs no contract claims, %d proving no boundary\n", st.Read, st.Mapped, st.Rejected, st.Unmapped, st.Nothing)
	if err != nil {
		return err
	}
	if st.Rejected > 0 {
		return &exitError{code: exitNotDelivered}
	}
	return nil
}

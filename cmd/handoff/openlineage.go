package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/caarlos0/env/v11"

	olin "github.com/handoff-dev/handoff/ingest/lineage"
)

// openLineageFlags defines openlineage's flags on fs over c.
func openLineageFlags(fs *flag.FlagSet, c *olin.Command) {
	fs.StringVar(&c.File, "file", "", "read run events from this file of JSON lines (- for standard input) instead of Kafka")
	fs.StringVar(&c.ContractsPath, "contract", envOr("HANDOFF_CONTRACTS", ""), "contract file or directory; contracts with an openlineage block claim jobs (required; env HANDOFF_CONTRACTS)")
	c.Kafka.RegisterFlags(fs)
	fs.StringVar(&c.OpenLineageTopic, "openlineage-topic", olin.DefaultTopic, "the topic OpenLineage's Kafka transport writes to")
	fs.StringVar(&c.Group, "group", olin.DefaultGroup, "consumer group of the OpenLineage topic")
	c.Kafka.RegisterTopicFlag(fs)
	fs.StringVar(&c.DLQTopic, "dlq-topic", envOr("HANDOFF_DLQ_TOPIC", "handoff.events.dlq"), "dead-letter topic of invalid run events (env HANDOFF_DLQ_TOPIC)")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "how long Kafka may take to acknowledge (env HANDOFF_EMIT_TIMEOUT)")
	fs.BoolVar(&c.Print, "print", false, "with --file: print the mapped events as JSON lines instead of sending them")
}

// runOpenLineage is `handoff openlineage`: OpenLineage run events in, from
// a Kafka topic or a file, mapped through the contracts to handoff events.
func runOpenLineage(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var ev emitEnv
	if err := env.Parse(&ev); err != nil {
		return usageError("environment: %v", err)
	}
	c := olin.Command{Kafka: ev.Kafka, Timeout: ev.Timeout}
	fs := flag.NewFlagSet("handoff openlineage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	openLineageFlags(fs, &c)
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
	if err := c.Prepare(); err != nil {
		return err
	}
	set, err := loadContracts(c.ContractsPath)
	if err != nil {
		return err
	}
	c.Contracts = set
	if err := c.Claimed(); err != nil {
		return err
	}
	return c.Run(ctx, stdin, stdout, stderr)
}

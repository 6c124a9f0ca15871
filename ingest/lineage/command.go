package lineage

import (
	"bufio"
	"context"
	"fmt"
	ol "github.com/handoff-dev/handoff/model/openlineage"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Command is one run of `handoff openlineage` as its flags give it: the
// OpenLineage topic (File empty) or a file of run events (File, "-" for
// standard input), mapped through Contracts.
type Command struct {
	File string
	// ContractsPath is --contract as given; Contracts the set loaded from
	// it (by the caller).
	ContractsPath string
	Contracts     *contract.Set
	// Kafka: the brokers and the events topic the mapped events go to.
	Kafka            cliflag.Kafka
	OpenLineageTopic string
	Group            string
	DLQTopic         string
	// Timeout is how long Kafka may take to acknowledge mapped events.
	Timeout time.Duration
	Print   bool
}

// Prepare checks the values that need no contract, naming the flag.
func (c *Command) Prepare() error {
	if c.ContractsPath == "" {
		return exitcode.Usagef("--contract is required: contracts say which jobs are which pipelines' and how runs map to batches")
	}
	if err := c.Kafka.Check(false); err != nil {
		return exitcode.Usagef("%v", err)
	}
	send := len(c.Kafka.Brokers) > 0 && !c.Print
	switch {
	case c.File == "" && !send:
		return exitcode.Usagef("--kafka-brokers is required to read the OpenLineage topic (or give --file)")
	case c.File != "" && !send && !c.Print:
		return exitcode.Usagef("--file needs --print or --kafka-brokers: say where the mapped events go")
	}
	return nil
}

// Claimed checks that some contract has an openlineage block (without
// one, no job maps to a pipeline and every run event would be dropped)
// and that no two claim the same job.
func (c *Command) Claimed() error {
	if err := ol.CheckClaims(c.Contracts); err != nil {
		return exitcode.Usagef("--contract %s: %v", c.ContractsPath, err)
	}
	for _, p := range c.Contracts.Pipelines() {
		if c.Contracts.For(p).OpenLineage != nil {
			return nil
		}
	}
	return exitcode.Usagef("--contract %s: no contract has an openlineage block, so no job maps to a pipeline", c.ContractsPath)
}

// Run maps run events until ctx is done (the topic) or the file ends,
// logging on stderr. From a file, lines that cannot be mapped are printed
// on stderr with their number, and any of them makes the run exit 1.
func (c *Command) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	var em *emit.Emitter
	if len(c.Kafka.Brokers) > 0 && !c.Print {
		var err error
		em, err = emit.New(emit.Config{Brokers: c.Kafka.Brokers, Topic: c.Kafka.Topic, Timeout: c.Timeout, CreateTopic: true,
			Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.Replication})
		if err != nil {
			return exitcode.Usagef("%v", err)
		}
		defer em.Close()
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if c.File == "" {
		b, err := NewBridge(Config{Brokers: c.Kafka.Brokers, Topic: c.OpenLineageTopic, Group: c.Group, DLQTopic: c.DLQTopic,
			Partitions: c.Kafka.Partitions, Log: log}, c.Contracts, em)
		if err != nil {
			return exitcode.Usagef("%v", err)
		}
		err = b.Run(ctx)
		st := b.Stats()
		log.Info("openlineage: stopped", "read", st.Read, "mapped_events", st.Mapped, "rejected", st.Rejected, "unmapped_jobs", st.Unmapped, "proving_nothing", st.Nothing)
		return err
	}
	return c.file(ctx, em, stdin, stdout, stderr)
}

// file maps the run events of c.File, sending them to em or, without it,
// printing them as JSON lines.
func (c *Command) file(ctx context.Context, em *emit.Emitter, stdin io.Reader, stdout, stderr io.Writer) error {
	r, name := stdin, "stdin"
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return exitcode.Usagef("--file: %v", err)
		}
		defer f.Close()
		r, name = f, c.File
	}
	out := bufio.NewWriter(stdout)
	yield := func(events []model.Event) error {
		if em != nil {
			return em.Send(ctx, events)
		}
		for i := range events {
			if _, err := out.Write(append(events[i].AppendJSON(nil), '\n')); err != nil {
				return fmt.Errorf("writing the mapped events: %w", err)
			}
		}
		return nil
	}
	st, err := Lines(ctx, r, c.Contracts, yield, func(line int, err error) { fmt.Fprintf(stderr, "%s:%d: %v\n", name, line, err) })
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("writing the mapped events: %w", ferr)
	}
	fmt.Fprintf(stderr, "openlineage: %d run events read, %d handoff events mapped, %d rejected, %d of jobs no contract claims, %d proving no boundary\n", st.Read, st.Mapped, st.Rejected, st.Unmapped, st.Nothing)
	if err != nil {
		return err
	}
	if st.Rejected > 0 {
		return exitcode.Silent(exitcode.NotDelivered)
	}
	return nil
}

package emit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/model"
)

// Fields are one event as the flags of `handoff emit` give it, as typed.
type Fields struct {
	Type, Pipeline, BusinessDate, BatchID, System, Component, Object string
	Rows, Bytes, Attempt                                             string
	Checksum, Error, EventID, Time                                   string
	Attrs                                                            map[string]string
}

// Event returns the event f describes, naming the flag of a value that
// does not parse (a usage error). What the event means is checked when it
// is sent (model.Event.Validate).
func (f *Fields) Event() (model.Event, error) {
	e := model.Event{
		ID: f.EventID, Type: model.EventType(f.Type), Pipeline: f.Pipeline, BatchID: f.BatchID,
		System: model.System(f.System), Component: f.Component, Object: f.Object, Checksum: f.Checksum, Error: f.Error,
	}
	if f.BusinessDate != "" {
		d, err := model.ParseDate(f.BusinessDate)
		if err != nil {
			return e, exitcode.Usagef("--business-date %q: %v", f.BusinessDate, err)
		}
		e.BusinessDate = d
	}
	if f.Time != "" {
		// Range-checked as every time flag: 0001-01-01 is the zero
		// time, which Fill would silently replace with now.
		t, err := cliflag.ParseTime("time", f.Time)
		if err != nil {
			return e, exitcode.Usagef("%v", err)
		}
		e.Time = t
	}
	var err error
	if e.Rows, e.HasRows, err = optInt("rows", f.Rows); err != nil {
		return e, err
	}
	if e.Bytes, e.HasBytes, err = optInt("bytes", f.Bytes); err != nil {
		return e, err
	}
	if e.Attempt, e.HasAttempt, err = optInt("attempt", f.Attempt); err != nil {
		return e, err
	}
	if len(f.Attrs) > 0 {
		e.Attrs = f.Attrs
	}
	return e, nil
}

func optInt(name, v string) (int64, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, exitcode.Usagef("--%s %q: want a whole number", name, v)
	}
	return n, true, nil
}

// fieldFlags are the flags that describe one event: with --stdin, the
// JSON lines do.
var fieldFlags = []string{"type", "pipeline", "business-date", "batch-id", "object", "rows", "bytes", "checksum", "attempt", "error", "event-id", "time", "attr"}

// Command is one run of `handoff emit`: one event from Fields, or JSON
// lines from standard input (Stdin).
type Command struct {
	Kafka       cliflag.Kafka
	Timeout     time.Duration
	CreateTopic bool
	Stdin       bool
	Quiet       bool
	Fields      Fields
	// Given says which flags were given on the command line.
	Given map[string]bool

	event model.Event
}

// Prepare checks the settings and the event's fields, naming the flag of
// what is wrong (a usage error).
func (c *Command) Prepare() error {
	if err := c.Kafka.Check(true); err != nil {
		return exitcode.Usagef("%v", err)
	}
	if c.Timeout <= 0 {
		return exitcode.Usagef("--timeout (HANDOFF_EMIT_TIMEOUT) %v: want a positive duration such as 10s", c.Timeout)
	}
	if c.Stdin {
		for _, name := range fieldFlags {
			if c.Given[name] {
				return exitcode.Usagef("--%s cannot be combined with --stdin: put the field in the JSON lines", name)
			}
		}
		return nil
	}
	for _, r := range []struct{ name, v string }{{"type", c.Fields.Type}, {"pipeline", c.Fields.Pipeline}, {"system", c.Fields.System}} {
		if r.v == "" {
			return exitcode.Usagef("--%s is required (or use --stdin)", r.name)
		}
	}
	var err error
	c.event, err = c.Fields.Event()
	return err
}

// Run publishes the event, or the lines of stdin, and waits for Kafka's
// acknowledgement, printing each acknowledged event's id, type and batch
// on stdout (unless Quiet). An event that does not validate is a usage
// error, as is a bad line (the error says how many were sent before it).
func (c *Command) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	em, err := New(Config{Brokers: c.Kafka.Brokers, Topic: c.Kafka.Topic, Timeout: c.Timeout, CreateTopic: c.CreateTopic,
		Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.Replication})
	if err != nil {
		return exitcode.Usagef("%v", err)
	}
	defer em.Close()
	printed := func(sent []model.Event) {
		if c.Quiet {
			return
		}
		for i := range sent {
			fmt.Fprintf(stdout, "%s %s %s\n", sent[i].ID, sent[i].Type, sent[i].PartitionKey())
		}
	}
	if !c.Stdin {
		events := []model.Event{c.event}
		if err := em.Send(ctx, events); err != nil {
			if ve := (*model.ValidationError)(nil); errors.As(err, &ve) {
				return &exitcode.Error{Code: exitcode.Usage, Err: err}
			}
			return err
		}
		printed(events)
		return nil
	}
	n, err := em.EmitLines(ctx, stdin, printed)
	if err != nil {
		var le *LineError
		var ve *model.ValidationError
		if errors.As(err, &le) || errors.As(err, &ve) {
			return exitcode.Usagef("stdin: %w (%d event(s) sent before it)", err, n)
		}
		return fmt.Errorf("%w (%d event(s) sent before it)", err, n)
	}
	if !c.Quiet {
		fmt.Fprintf(stderr, "handoff emit: %d event(s) acknowledged by Kafka on %s\n", n, c.Kafka.Topic)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
)

// emitEnv is the environment of `handoff emit`; flags override it.
type emitEnv struct {
	Brokers    []string      `env:"HANDOFF_KAFKA_BROKERS" envSeparator:","`
	Topic      string        `env:"HANDOFF_TOPIC" envDefault:"handoff.events"`
	Timeout    time.Duration `env:"HANDOFF_EMIT_TIMEOUT" envDefault:"30s"`
	Partitions int           `env:"HANDOFF_TOPIC_PARTITIONS" envDefault:"6"`
	System     string        `env:"HANDOFF_SYSTEM"`
	Component  string        `env:"HANDOFF_COMPONENT"`
}

type attrFlag map[string]string

func (a attrFlag) String() string { return "" }
func (a attrFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	a[k] = v
	return nil
}

// runEmit is `handoff emit`: publish one event described by flags, or JSON
// lines from stdin (--stdin), and wait until Kafka acknowledged them.
func runEmit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var ev emitEnv
	if err := env.Parse(&ev); err != nil {
		return usageError("emit configuration from the environment: %v", err)
	}
	fs := flag.NewFlagSet("handoff emit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		brokers   = fs.String("kafka-brokers", strings.Join(ev.Brokers, ","), "Kafka brokers, host:port[,...] (HANDOFF_KAFKA_BROKERS)")
		topic     = fs.String("topic", ev.Topic, "events topic (HANDOFF_TOPIC)")
		timeout   = fs.Duration("timeout", ev.Timeout, "fail when Kafka has not acknowledged within this time (HANDOFF_EMIT_TIMEOUT)")
		noCreate  = fs.Bool("no-create-topic", false, "do not create the topic when it is missing")
		useStdin  = fs.Bool("stdin", false, "read events as JSON lines from stdin instead of flags")
		quiet     = fs.Bool("quiet", false, "print nothing on success")
		typ       = fs.String("type", "", "event type, e.g. job.succeeded (required)")
		pipeline  = fs.String("pipeline", "", "pipeline name (required)")
		bdate     = fs.String("business-date", "", "business date YYYY-MM-DD (required except for process.heartbeat)")
		batchID   = fs.String("batch-id", "", "batch id (required except for process.heartbeat)")
		system    = fs.String("system", ev.System, "producer, exchange, consumer or operator (required; HANDOFF_SYSTEM)")
		component = fs.String("component", ev.Component, "emitting component, e.g. host or job name (HANDOFF_COMPONENT)")
		object    = fs.String("object", "", "artifact or signal name (required for artifact.* and signal.*)")
		rows      = fs.String("rows", "", "row count (required for artifact.finalized and consume.succeeded)")
		bytesF    = fs.String("bytes", "", "size in bytes")
		checksum  = fs.String("checksum", "", "checksum, e.g. sha256:9f2c...")
		attempt   = fs.String("attempt", "", "attempt number")
		errText   = fs.String("error", "", "error text (required for *.failed)")
		eventID   = fs.String("event-id", "", "event id (default: a new UUIDv7); reuse one to make a retried emit idempotent")
		at        = fs.String("time", "", "event time, RFC 3339 (default: now)")
		attrs     = attrFlag{}
	)
	fs.Var(attrs, "attr", "attribute key=value (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff emit --type T --pipeline P --business-date D --batch-id B --system S [flags]")
		fmt.Fprintln(stderr, "       handoff emit --stdin < events.jsonl")
		fmt.Fprintln(stderr, "\nPublish delivery events to Kafka and wait for the acknowledgement. Exit 0 when acknowledged,")
		fmt.Fprintln(stderr, "2 on bad input, 3 when Kafka does not acknowledge in time. See docs/emit.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var bl []string
	for _, b := range strings.Split(*brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			bl = append(bl, b)
		}
	}
	if err := topics.CheckBrokers(bl); err != nil {
		return usageError("--kafka-brokers (HANDOFF_KAFKA_BROKERS): %v", err)
	}
	if err := topics.CheckName(*topic); err != nil {
		return usageError("--topic (HANDOFF_TOPIC): %v", err)
	}
	if *timeout <= 0 {
		return usageError("--timeout (HANDOFF_EMIT_TIMEOUT) %v: want a positive duration such as 10s", *timeout)
	}

	var events []model.Event
	if !*useStdin {
		for _, name := range []string{"type", "pipeline", "system"} {
			if !set[name] && fs.Lookup(name).Value.String() == "" {
				return usageError("--%s is required (or use --stdin)", name)
			}
		}
		e := model.Event{
			ID: *eventID, Type: model.EventType(*typ), Pipeline: *pipeline, BatchID: *batchID,
			System: model.System(*system), Component: *component, Object: *object, Checksum: *checksum, Error: *errText,
		}
		if *bdate != "" {
			d, err := model.ParseDate(*bdate)
			if err != nil {
				return usageError("--business-date %q: %v", *bdate, err)
			}
			e.BusinessDate = d
		}
		if *at != "" {
			// Range-checked as every time flag: 0001-01-01 is the zero
			// time, which Fill would silently replace with now.
			t, err := cliflag.ParseTime("time", *at)
			if err != nil {
				return usageError("%v", err)
			}
			e.Time = t
		}
		var err error
		if e.Rows, e.HasRows, err = emitOptInt("rows", *rows); err != nil {
			return err
		}
		if e.Bytes, e.HasBytes, err = emitOptInt("bytes", *bytesF); err != nil {
			return err
		}
		if e.Attempt, e.HasAttempt, err = emitOptInt("attempt", *attempt); err != nil {
			return err
		}
		if len(attrs) > 0 {
			e.Attrs = map[string]string(attrs)
		}
		events = append(events, e)
	} else {
		for _, name := range []string{"type", "pipeline", "business-date", "batch-id", "object", "rows", "bytes", "checksum", "attempt", "error", "event-id", "time", "attr"} {
			if set[name] {
				return usageError("--%s cannot be combined with --stdin: put the field in the JSON lines", name)
			}
		}
	}

	em, err := emit.New(emit.Config{Brokers: bl, Topic: *topic, Timeout: *timeout, CreateTopic: !*noCreate, Partitions: ev.Partitions})
	if err != nil {
		return usageError("%v", err)
	}
	defer em.Close()

	if *useStdin {
		if stdin == nil {
			stdin = os.Stdin
		}
		n, err := em.EmitLines(ctx, stdin, func(sent []model.Event) {
			if *quiet {
				return
			}
			for i := range sent {
				fmt.Fprintf(stdout, "%s %s %s\n", sent[i].ID, sent[i].Type, sent[i].PartitionKey())
			}
		})
		if err != nil {
			var le *emit.LineError
			var ve *model.ValidationError
			if errors.As(err, &le) || errors.As(err, &ve) {
				return &exitError{code: exitUsage, err: fmt.Errorf("stdin: %w (%d event(s) sent before it)", err, n)}
			}
			return fmt.Errorf("%w (%d event(s) sent before it)", err, n)
		}
		if !*quiet {
			fmt.Fprintf(stderr, "handoff emit: %d event(s) acknowledged by Kafka on %s\n", n, *topic)
		}
		return nil
	}

	if err := em.Send(ctx, events); err != nil {
		var ve *model.ValidationError
		if errors.As(err, &ve) {
			return &exitError{code: exitUsage, err: err}
		}
		return err
	}
	if !*quiet {
		e := events[0]
		fmt.Fprintf(stdout, "%s %s %s\n", e.ID, e.Type, e.PartitionKey())
	}
	return nil
}

func emitOptInt(name, v string) (int64, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, usageError("--%s %q: want a whole number", name, v)
	}
	return n, true, nil
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/cliflag"
)

// emitEnv is the environment of the commands that emit events (emit,
// watch, openlineage, restore-signal); flags override it.
type emitEnv struct {
	cliflag.Kafka
	Timeout   time.Duration `env:"HANDOFF_EMIT_TIMEOUT" envDefault:"30s"`
	System    string        `env:"HANDOFF_SYSTEM"`
	Component string        `env:"HANDOFF_COMPONENT"`
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

// emitFlags defines emit's flags on fs over c.
func emitFlags(fs *flag.FlagSet, c *emit.Command) {
	c.Kafka.RegisterFlags(fs)
	c.Kafka.RegisterTopicFlag(fs)
	f := &c.Fields
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "fail when Kafka has not acknowledged within this time (HANDOFF_EMIT_TIMEOUT)")
	fs.BoolFunc("no-create-topic", "do not create the topic when it is missing", func(string) error { c.CreateTopic = false; return nil })
	fs.BoolVar(&c.Stdin, "stdin", false, "read events as JSON lines from stdin instead of flags")
	fs.BoolVar(&c.Quiet, "quiet", false, "print nothing on success")
	fs.StringVar(&f.Type, "type", "", "event type, e.g. job.succeeded (required)")
	fs.StringVar(&f.Pipeline, "pipeline", "", "pipeline name (required)")
	fs.StringVar(&f.BusinessDate, "business-date", "", "business date YYYY-MM-DD (required except for process.heartbeat)")
	fs.StringVar(&f.BatchID, "batch-id", "", "batch id (required except for process.heartbeat)")
	fs.StringVar(&f.System, "system", f.System, "producer, exchange, consumer or operator (required; HANDOFF_SYSTEM)")
	fs.StringVar(&f.Component, "component", f.Component, "emitting component, e.g. host or job name (HANDOFF_COMPONENT)")
	fs.StringVar(&f.Object, "object", "", "artifact or signal name (required for artifact.* and signal.*)")
	fs.StringVar(&f.Rows, "rows", "", "row count (required for artifact.finalized and consume.succeeded)")
	fs.StringVar(&f.Bytes, "bytes", "", "size in bytes")
	fs.StringVar(&f.Checksum, "checksum", "", "checksum, e.g. sha256:9f2c...")
	fs.StringVar(&f.Attempt, "attempt", "", "attempt number")
	fs.StringVar(&f.Error, "error", "", "error text (required for *.failed)")
	fs.StringVar(&f.EventID, "event-id", "", "event id (default: a new UUIDv7); reuse one to make a retried emit idempotent")
	fs.StringVar(&f.Time, "time", "", "event time, RFC 3339 (default: now)")
	fs.Var(attrFlag(f.Attrs), "attr", "attribute key=value (repeatable)")
}

// runEmit is `handoff emit`: publish one event described by flags, or JSON
// lines from stdin (--stdin), and wait until Kafka acknowledged them.
func runEmit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var ev emitEnv
	if err := env.Parse(&ev); err != nil {
		return usageError("emit configuration from the environment: %v", err)
	}
	c := emit.Command{Kafka: ev.Kafka, Timeout: ev.Timeout, CreateTopic: true,
		Fields: emit.Fields{System: ev.System, Component: ev.Component, Attrs: map[string]string{}}}
	fs := flag.NewFlagSet("handoff emit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	emitFlags(fs, &c)
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
	c.Given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { c.Given[f.Name] = true })
	if err := c.Prepare(); err != nil {
		return err
	}
	if stdin == nil {
		stdin = os.Stdin
	}
	return c.Run(ctx, stdin, stdout, stderr)
}

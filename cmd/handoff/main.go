// Command handoff finds where a data delivery stopped.
//
// Usage:
//
//	handoff COMMAND [flags]
//	handoff version
//
// "handoff help" lists the commands; "handoff COMMAND -h" prints a
// command's flags (on standard error, exit 0). Deployment settings
// (addresses, topics, tuning) also read HANDOFF_* environment variables,
// and a flag given on the command line wins; docs/configuration.md lists
// which flags have one, and the exit codes.
//
// This file only wires: each command lives in its own file and calls into
// the rooms (model, analyzer, ingest, store, judge, notify, query).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/handoff-dev/handoff/internal/exitcode"
	"github.com/handoff-dev/handoff/model"
	// Contracts name time zones (Asia/Shanghai); embed the zone database so
	// they load on machines without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// Exit codes, documented in docs/configuration.md.
const (
	exitOK           = exitcode.OK
	exitNotDelivered = exitcode.NotDelivered
	exitUsage        = exitcode.Usage
	exitFailure      = exitcode.Failure
)

// exitError carries an exit code through an error return (the commands'
// files; the packages they call return an *exitcode.Error).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageError marks an error as the caller's mistake (exit 2).
func usageError(format string, args ...any) error {
	return exitcode.Usagef(format, args...)
}

// parseFlags parses a command's flags: -h prints the usage and ends the
// command with exit 0, a bad flag with exit 2 (the flag package has said
// why), and so does a stray argument, which is usually an unquoted value.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &exitError{code: exitOK}
		}
		return &exitError{code: exitUsage}
	}
	if fs.NArg() > 0 {
		return usageError("unexpected arguments: %s (values with spaces need quotes)", strings.Join(fs.Args(), " "))
	}
	return nil
}

// envOr returns the environment variable name, or def when it is unset or
// empty.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"diagnose", "replay delivery events and say where each batch stopped", runDiagnose},
		{"ingest", "consume delivery events from Kafka into ClickHouse", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runIngest(ctx, args, stdout, stderr)
		}},
		{"detect", "watch the events topic and publish findings when deliveries stall", runDetect},
		{"emit", "publish delivery events to Kafka (from flags or JSON lines)", runEmit},
		{"backfill", "diagnose every stored batch of a range of dates and publish the diagnoses", runBackfill},
		{"broker", "run the embedded Kafka-protocol broker (demo default)", runBroker},
		{"notify", "deliver findings to Alertmanager and webhooks", runNotify},
		{"restore-signal", "prove a batch's artifact safe, then restore its missing completion signal", runRestoreSignal},
		{"verify", "check a batch end to end after a fix", runVerify},
		{"watch", "emit the boundary events that files arriving in a directory prove", runWatch},
		{"openlineage", "map OpenLineage run events (Kafka or a file) to delivery events", runOpenLineage},
		{"serve", "serve the JSON API and web pages over the delivery history", runServe},
		{"findings", "print the detector's stored findings (open ones by default)", runFindings},
		{"version", "print handoff's version and the revision it was built from", runVersion},
		{"contracts", "suggest delivery contracts from the stored history (contracts suggest)", runContracts},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs a command. Its standard output goes through model.TextWriter,
// the one escaping of every output: text from events (errors, components,
// names) reaches terminals, which act on control characters. Standard
// error carries progress bars (\r) and logs that quote their values; the
// final error line is escaped.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := model.NewTextWriter(stdout)
	defer out.Flush()
	return runCommand(ctx, args, stdin, out, stderr)
}

func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdin, stdout, stderr)
		var ee *exitError
		if errors.As(err, &ee) {
			err = &exitcode.Error{Code: ee.code, Err: ee.err}
		}
		code, msg := exitcode.Of(err)
		if msg != nil {
			// The one prefix of every message: the packages below say
			// what failed, not which command they run in.
			fmt.Fprintf(stderr, "handoff %s: %s\n", c.name, model.EscapeText(msg.Error()))
		}
		return code
	}
	fmt.Fprintf(stderr, "handoff: unknown command %q\n", args[0]) // %q escapes
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "handoff finds where a data delivery stopped.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: handoff COMMAND [flags]")
	fmt.Fprintln(w)
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "handoff COMMAND -h" for a command's flags; exit codes: docs/configuration.md.`)
}

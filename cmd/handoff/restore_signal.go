package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/ingest/restore"
)

// restoreReport is restore-signal's JSON output.
type restoreReport struct {
	remedy.Plan
	Dir   string `json:"dir"`
	Apply bool   `json:"apply"`
	// Content is what the signal holds (or would hold): "" for an empty
	// signal, else the manifest.
	Content string `json:"content"`
	Outcome string `json:"outcome"`
	// EventID is the id of the signal.restored event recorded ("" when
	// none was).
	EventID    string `json:"event_id,omitempty"`
	RecordedTo string `json:"recorded_to,omitempty"`
	// Next is the command to run next, as printed ("" when none).
	Next string `json:"next,omitempty"`
}

// runRestoreSignal is `handoff restore-signal`: prove the artifact safe,
// then (with --apply) restore the missing completion signal.
func runRestoreSignal(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	cfg, err := parseRemedyEnv()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("handoff restore-signal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	remedyFlags(fs, &cfg, true, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff restore-signal --batch KEY --dir RECEIVER_DIR --contract FILE|DIR (--events FILE | --clickhouse ADDR) [--apply --reason TEXT]")
		fmt.Fprintln(stderr, "\nChecks every precondition of restoring a batch's missing completion signal against the recorded events")
		fmt.Fprintln(stderr, "and the real files, and prints each as proven or not. Dry run by default; --apply proves signal.restored can")
		fmt.Fprintln(stderr, "be recorded, writes the signal atomically and records signal.restored. Exit status: 0 proven (dry run),")
		fmt.Fprintln(stderr, "restored, or already in place with every precondition proven; 1 refused: a precondition is not proven,")
		fmt.Fprintln(stderr, "nothing written; 2 bad usage; 3 failure. See docs/remediation.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.check(fs); err != nil {
		return err
	}
	req := restore.Request{Key: cfg.key, Dir: cfg.Dir, AsOf: cfg.asOf, Settle: cfg.Settle, Apply: cfg.Apply, Who: whoRestores(cfg.Reason)}
	if cfg.Apply {
		if req.Recorder, err = cfg.recorder(); err != nil {
			return err
		}
		defer req.Recorder.Close()
	}
	set, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	req.Contract = set.For(cfg.key.Pipeline)
	res, err := restore.Run(ctx, cfg.batchHistory(set, stderr), req)
	rep := restoreReport{Plan: res.Plan, Dir: cfg.Dir, Apply: cfg.Apply, Content: string(res.Plan.Content), Outcome: res.Outcome, RecordedTo: res.RecordedTo}
	if res.Event != nil {
		rep.EventID = res.Event.ID
	}
	if errors.Is(err, restore.ErrUnrecorded) {
		printRestore(stdout, &rep, cfg.Format)
		return fmt.Errorf("%w; record it with: echo %s | handoff emit --stdin", err, shellQuote(string(res.Event.AppendJSON(nil))))
	}
	if err != nil {
		return err
	}
	rep.Next = cfg.nextStep(&rep)
	if err := printRestore(stdout, &rep, cfg.Format); err != nil {
		return writing(err)
	}
	if rep.Outcome == restore.Refused {
		return &exitError{code: exitNotDelivered}
	}
	return nil
}

// recorder is where --apply records signal.restored: Kafka with
// --kafka-brokers, else the --events file read.
func (cfg *remedyConfig) recorder() (restore.Recorder, error) {
	switch {
	case cfg.Brokers != "":
		return &restore.KafkaRecorder{Brokers: strings.Split(cfg.Brokers, ","), Topic: cfg.Kafka.Topic, Timeout: cfg.Kafka.Timeout, Partitions: cfg.Kafka.Partitions}, nil
	case cfg.Events != "":
		return &restore.FileRecorder{Path: cfg.Events}, nil
	}
	return nil, usageError("--apply must record signal.restored: give --kafka-brokers (or HANDOFF_KAFKA_BROKERS), or read --events FILE to append it there")
}

// nextStep is the complete command to run after rep, as printed.
func (cfg *remedyConfig) nextStep(rep *restoreReport) string {
	switch rep.Outcome {
	case restore.WouldRestore:
		args := append([]string{"handoff", "restore-signal"}, cfg.sourceArgs()...)
		if cfg.AsOf != "" {
			args = append(args, "--as-of", cfg.AsOf)
		}
		if cfg.Brokers != "" {
			args = append(args, "--kafka-brokers", cfg.Brokers, "--topic", cfg.Kafka.Topic)
		}
		return shellCommand(append(args, "--settle", cfg.Settle.String(), "--apply", "--reason", "every precondition proven by the dry run")...)
	case restore.Restored, restore.InPlace:
		return shellCommand(append(append([]string{"handoff", "verify"}, cfg.sourceArgs()...), "--wait", "10m")...)
	}
	return ""
}

func printRestore(w io.Writer, r *restoreReport, format string) error {
	if format == "json" {
		return writeJSON(w, r)
	}
	bw := bufio.NewWriter(w)
	mode := "dry run"
	if r.Apply {
		mode = "apply"
	}
	fmt.Fprintf(bw, "restore-signal %s (%s)\n", r.Batch, mode)
	content := "empty"
	if r.Content != "" {
		content = strings.TrimSpace(r.Content)
	}
	fmt.Fprintf(bw, "  receiver  %s\n  data file %s\n  signal    %s\n  content   %s\n", r.Dir, r.Artifact, r.Signal, content)
	printResults(bw, "PRECONDITIONS (artifact first, signal last)", r.Preconditions, "proven", "NOT PROVEN")
	fmt.Fprintln(bw, "RESULT")
	switch {
	case r.Outcome == restore.InPlace:
		fmt.Fprintf(bw, "  the signal %s is already in place with the content a restore would write, and every other precondition is proven: nothing changed\n", r.Signal)
	case r.Outcome == restore.Refused && r.Present:
		fmt.Fprintf(bw, "  refused: the signal %s is at the receiver with the content a restore would write, but not proven: %s; it declares a delivery these facts do not support; nothing written\n", r.Signal, strings.Join(r.Unjustified(), ", "))
	case r.Outcome == restore.Refused:
		fmt.Fprintf(bw, "  refused: not proven: %s; nothing written\n", strings.Join(r.Unproven(), ", "))
	case r.Outcome == restore.WouldRestore:
		fmt.Fprintf(bw, "  every precondition is proven: run it with --apply to write %s (put your own --reason)\n", r.Signal)
	case r.Outcome == restore.Restored && r.RecordedTo == "":
		fmt.Fprintf(bw, "  restored %s (%d bytes, written then renamed), but signal.restored %s is NOT recorded: see the error below\n", r.Signal, len(r.Content), r.EventID)
	case r.Outcome == restore.Restored:
		fmt.Fprintf(bw, "  restored %s (%d bytes, written then renamed); signal.restored %s recorded to %s\n", r.Signal, len(r.Content), r.EventID, r.RecordedTo)
	}
	if r.Next != "" {
		fmt.Fprintf(bw, "  next: %s\n", r.Next)
	}
	return bw.Flush()
}

// whoRestores says who restores: the user and host, and why.
func whoRestores(reason string) remedy.Who {
	who := remedy.Who{Reason: reason, User: os.Getenv("USER")}
	if u, err := user.Current(); err == nil {
		who.User = u.Username
	}
	who.Host, _ = os.Hostname()
	return who
}

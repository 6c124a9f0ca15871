package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/ingest/files"
	"github.com/handoff-dev/handoff/model"
)

// Outcomes of restore-signal, as its JSON output names them.
const (
	outcomeWouldRestore = "would_restore" // dry run, every precondition proven
	outcomeRestored     = "restored"
	outcomeInPlace      = "in_place" // the signal already holds what a restore writes
	outcomeRefused      = "refused"
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
}

// runRestoreSignal is `handoff restore-signal`: prove the artifact safe,
// then (with --apply) restore the missing completion signal.
func runRestoreSignal(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	cfg, err := parseRemedyEnv()
	if err != nil {
		return err
	}
	var ev emitEnv
	if err := env.Parse(&ev); err != nil {
		return usageError("environment: %v", err)
	}
	fs := flag.NewFlagSet("handoff restore-signal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	remedyFlags(fs, &cfg, true)
	apply := fs.Bool("apply", false, "write the signal when every precondition is proven (default: dry run)")
	reason := fs.String("reason", "", "why the signal is restored, recorded in signal.restored (required with --apply)")
	brokers := fs.String("kafka-brokers", strings.Join(ev.Brokers, ","), "record signal.restored on Kafka at host:port[,...] (env HANDOFF_KAFKA_BROKERS); without it, --apply appends the event to the --events file")
	topic := fs.String("topic", ev.Topic, "events topic (env HANDOFF_TOPIC)")
	timeout := fs.Duration("timeout", ev.Timeout, "how long Kafka may take to acknowledge signal.restored (env HANDOFF_EMIT_TIMEOUT)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff restore-signal --batch KEY --dir RECEIVER_DIR --contract FILE|DIR (--events FILE | --clickhouse ADDR) [--apply --reason TEXT]")
		fmt.Fprintln(stderr, "\nChecks every precondition of restoring a batch's missing completion signal against the recorded events")
		fmt.Fprintln(stderr, "and the real files, and prints each as proven or not. Dry run by default; --apply writes the signal")
		fmt.Fprintln(stderr, "atomically and records signal.restored. Exit status: 0 proven (dry run), restored, or already in place;")
		fmt.Fprintln(stderr, "1 refused: a precondition is not proven, nothing written; 2 bad usage; 3 failure. See docs/remediation.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.check(); err != nil {
		return err
	}
	if *apply && strings.TrimSpace(*reason) == "" {
		return usageError("--apply needs --reason TEXT: signal.restored records why the signal was restored")
	}
	var record func(context.Context, model.Event) (string, error)
	if *apply {
		switch {
		case *brokers != "":
			list := strings.Split(*brokers, ",")
			record = func(ctx context.Context, e model.Event) (string, error) {
				em, err := emit.New(emit.Config{Brokers: list, Topic: *topic, Timeout: *timeout, CreateTopic: true, Partitions: ev.Partitions})
				if err != nil {
					return "", err
				}
				defer em.Close()
				return "kafka " + *brokers + " topic " + *topic, em.Emit(ctx, e)
			}
		case cfg.Events != "":
			record = func(_ context.Context, e model.Event) (string, error) {
				return cfg.Events, appendEvent(cfg.Events, e)
			}
		default:
			return usageError("--apply must record signal.restored: give --kafka-brokers (or HANDOFF_KAFKA_BROKERS), or read --events FILE to append it there")
		}
	}
	set, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	c := set.For(cfg.key.Pipeline)
	d, _, err := replayBatch(ctx, &cfg, set, stderr)
	if err != nil {
		return err
	}
	facts, err := probeReceiver(ctx, &cfg, c)
	if err != nil {
		return err
	}
	plan := remedy.Restore(&d, c, facts)
	rep := restoreReport{Plan: plan, Dir: cfg.Dir, Apply: *apply, Content: string(plan.Content)}
	var code int
	switch {
	case plan.InPlace:
		rep.Outcome = outcomeInPlace
	case !plan.Proven():
		rep.Outcome, code = outcomeRefused, exitNotDelivered
	case !*apply:
		rep.Outcome = outcomeWouldRestore
	default:
		// The mark tells watchers at the receiver that this signal was
		// restored (and recorded by signal.restored), not delivered.
		o, err := files.WriteAtomic(cfg.Dir, plan.Signal, plan.Content, 0o644, remedy.EventID(cfg.key, plan.Signal, plan.Content))
		if err != nil {
			return fmt.Errorf("restore %s in %s: %w (nothing recorded)", plan.Signal, cfg.Dir, err)
		}
		switch o {
		case files.Unchanged:
			rep.Outcome = outcomeInPlace
		case files.Conflict:
			rep.Outcome, code = outcomeRefused, exitNotDelivered
			rep.Preconditions = append(rep.Preconditions, remedy.Result{Name: remedy.PreNoSignal, Detail: "a signal with other content appeared while the preconditions were checked; it was left as it is", Evidence: []string{}})
		case files.Written:
			rep.Outcome = outcomeRestored
			at := cfg.asOf
			if at.IsZero() {
				at = time.Now()
			}
			e := plan.Event(&d, facts, whoRestores(*reason), at)
			rep.EventID = e.ID
			where, err := record(ctx, e)
			if err != nil {
				printRestore(stdout, &rep, cfg.Format)
				return fmt.Errorf("the signal %s was written, but recording signal.restored failed: %w; record it with: echo '%s' | handoff emit --stdin", plan.Signal, err, e.AppendJSON(nil))
			}
			rep.RecordedTo = where
		}
	}
	if err := printRestore(stdout, &rep, cfg.Format); err != nil {
		return writing(err)
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
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
	switch r.Outcome {
	case outcomeInPlace:
		fmt.Fprintf(bw, "  the signal %s is already in place with the content a restore would write: nothing changed\n", r.Signal)
	case outcomeRefused:
		fmt.Fprintf(bw, "  refused: not proven: %s; nothing written\n", strings.Join(r.Unproven(), ", "))
	case outcomeWouldRestore:
		fmt.Fprintf(bw, "  every precondition is proven: run again with --apply --reason TEXT to write %s\n", r.Signal)
	case outcomeRestored:
		fmt.Fprintf(bw, "  restored %s (%d bytes, written then renamed); signal.restored %s recorded to %s\n", r.Signal, len(r.Content), r.EventID, r.RecordedTo)
		fmt.Fprintf(bw, "  next: handoff verify --batch %s --dir %s --wait 10m\n", r.Batch, r.Dir)
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

// appendEvent appends e as one JSON line to the events file, synced: the
// next diagnose of that file sees the restore.
func appendEvent(path string, e model.Event) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("append signal.restored to %s: %w", path, err)
	}
	line := append(e.AppendJSON(nil), '\n')
	// A file whose last line has no newline would glue the event to it.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("append signal.restored to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return f.Close()
}

package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/ingest/restore"
)

// verifyReport is verify's JSON output.
type verifyReport struct {
	remedy.Verification
	Dir    string `json:"dir"`
	Passed bool   `json:"passed"`
	// Waited is how long --wait waited for the consumer.
	Waited string `json:"waited,omitempty"`
}

// runVerify is `handoff verify`: the end-to-end checks after a fix.
func runVerify(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	cfg, err := parseRemedyEnv()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("handoff verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	remedyFlags(fs, &cfg, false, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff verify --batch KEY --dir RECEIVER_DIR --contract FILE|DIR (--events FILE | --clickhouse ADDR) [--wait DURATION]")
		fmt.Fprintln(stderr, "\nChecks a batch end to end after a fix: artifact readable, signal identity and continuity, consumed")
		fmt.Fprintln(stderr, "exactly once, no other batch affected, consumed rows = verified artifact rows. Exit status: 0 every")
		fmt.Fprintln(stderr, "check passed, 1 a check failed, 2 bad usage, 3 failure. See docs/remediation.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.check(fs); err != nil {
		return err
	}
	if cfg.Poll <= 0 {
		return usageError("--wait must not be negative and --poll must be positive")
	}
	set, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	req := restore.VerifyRequest{Key: cfg.key, Dir: cfg.Dir, Contract: set.For(cfg.key.Pipeline), AsOf: cfg.asOf, Wait: cfg.Wait, Poll: cfg.Poll}
	v, waited, err := restore.Verify(ctx, cfg.batchHistory(set, stderr), req)
	if err != nil {
		return err
	}
	rep := verifyReport{Verification: v, Dir: cfg.Dir, Passed: v.Passed()}
	if cfg.Wait > 0 {
		rep.Waited = waited.Round(time.Millisecond).String()
	}
	if err := printVerify(stdout, &rep, cfg.Format); err != nil {
		return writing(err)
	}
	if !rep.Passed {
		return &exitError{code: exitNotDelivered}
	}
	return nil
}

func printVerify(w io.Writer, r *verifyReport, format string) error {
	if format == "json" {
		return writeJSON(w, r)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "verify %s\n  receiver  %s\n", r.Batch, r.Dir)
	if r.Waited != "" {
		fmt.Fprintf(bw, "  waited    %s\n", r.Waited)
	}
	printResults(bw, "CHECKS", r.Checks, "pass", "FAIL")
	fmt.Fprintln(bw, "RESULT")
	if r.Passed {
		fmt.Fprintf(bw, "  every check passed: %s is delivered end to end\n", r.Batch)
	} else {
		fmt.Fprintf(bw, "  failed: %s\n", strings.Join(r.Failed(), ", "))
	}
	return bw.Flush()
}

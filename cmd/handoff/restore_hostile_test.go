package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/ingest/restore"
	"github.com/handoff-dev/handoff/model"
)

// runArgs runs handoff with args and returns the exit code and outputs.
func runArgs(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// noFlag fails when the case's signal name exists at the receiver, as a
// file or a link.
func (rc *restoreCase) noFlag(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(rc.recv, name)); err == nil {
		t.Fatalf("%s was written", name)
	}
}

// TestRestoreSignalUnrecordableWritesNothing: a restore that cannot be
// recorded is refused before the signal exists.
func TestRestoreSignalUnrecordableWritesNothing(t *testing.T) {
	t.Run("Kafka that does not answer", func(t *testing.T) {
		rc := newRestoreCase(t)
		rc.writeEvents(t)
		before := rc.snapshot(t)
		code, _, errOut := rc.restore(t, "--apply", "--reason", "r", "--kafka-brokers", "127.0.0.1:1", "--timeout", "5s")
		if code != exitFailure || !strings.Contains(errOut, "nothing written") || !strings.Contains(errOut, "127.0.0.1:1") {
			t.Fatalf("exit %d, %s; want exit 3 saying nothing was written", code, errOut)
		}
		rc.noFlag(t, storyFlag)
		if rc.snapshot(t) != before {
			t.Fatal("something was written")
		}
	})
	t.Run("events file not writable", func(t *testing.T) {
		rc := newRestoreCase(t)
		rc.writeEvents(t)
		readOnly(t, rc.events)
		before := rc.snapshot(t)
		code, _, errOut := rc.restore(t, "--apply", "--reason", "r")
		if code != exitFailure || !strings.Contains(errOut, "nothing written") || !strings.Contains(errOut, rc.events) {
			t.Fatalf("exit %d, %s; want exit 3 naming the events file and saying nothing was written", code, errOut)
		}
		rc.noFlag(t, storyFlag)
		if rc.snapshot(t) != before {
			t.Fatal("something was written")
		}
	})
}

// readOnly makes path impossible to append to for this process: chmod
// for a user, the immutable attribute for root (whom modes do not stop).
func readOnly(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
	} else {
		if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
			t.Fatalf("chattr +i %s (root needs it to make a file read-only): %v %s", path, err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
	}
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		f.Close()
		t.Fatalf("%s is still writable", path)
	}
}

// TestRestoreSignalPresentIsNotProof: what is already at the signal's name
// is said exactly, and only a regular file with the right content, with
// every other precondition proven, is "in place".
func TestRestoreSignalPresentIsNotProof(t *testing.T) {
	for _, tt := range []struct {
		name     string
		setup    func(t *testing.T, rc *restoreCase)
		unproven []string
		says     string // the text output says this
	}{
		{"flag there, rows and checksum not proven", func(t *testing.T, rc *restoreCase) {
			rc.writeData(t, storyFlag, nil)
			rc.writeData(t, storyData, csvData(499))
		}, []string{"rows_valid", "checksum_unchanged", "no_signal_present"},
			"refused: the signal account_balance_snapshot_20260930.flag is at the receiver with the content a restore would write, but not proven: rows_valid, checksum_unchanged"},
		{"dangling link as the signal", func(t *testing.T, rc *restoreCase) {
			if err := os.Symlink(filepath.Join(rc.dir, "gone.flag"), filepath.Join(rc.recv, storyFlag)); err != nil {
				t.Fatal(err)
			}
		}, []string{"no_signal_present"}, `is a dangling symbolic link: its target`},
		{"link to an empty file outside", func(t *testing.T, rc *restoreCase) {
			outside := filepath.Join(t.TempDir(), "empty")
			if err := os.WriteFile(outside, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(rc.recv, storyFlag)); err != nil {
				t.Fatal(err)
			}
		}, []string{"no_signal_present"}, `is a symbolic link to "`},
		{"data file linked to outside the receiver", func(t *testing.T, rc *restoreCase) {
			outside := filepath.Join(t.TempDir(), storyData)
			if err := os.WriteFile(outside, rc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(rc.recv, storyData))
			if err := os.Symlink(outside, filepath.Join(rc.recv, storyData)); err != nil {
				t.Fatal(err)
			}
		}, []string{"artifact_at_receiver", "rows_valid", "checksum_unchanged"}, `not a regular file in the receiver directory (links are not followed)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := newRestoreCase(t)
			rc.writeEvents(t)
			tt.setup(t, rc)
			before := rc.snapshot(t)
			for _, apply := range [][]string{nil, {"--apply", "--reason", "r"}} {
				code, o, errOut := rc.restore(t, apply...)
				if code != exitNotDelivered || o.Outcome != restore.Refused || !slices.Equal(o.unproven(), tt.unproven) {
					t.Fatalf("%v: exit %d, outcome %s, unproven %v; want exit 1, refused, %v\n%s", apply, code, o.Outcome, o.unproven(), tt.unproven, errOut)
				}
			}
			code, out, _ := runArgs("restore-signal", "--batch", storyBatch, "--dir", rc.recv, "--contract", rc.contract, "--events", rc.events, "--as-of", "2026-10-03T00:00:00Z", "--settle", "0")
			if code != exitNotDelivered || !strings.Contains(out, tt.says) {
				t.Fatalf("text: exit %d, want it to say %q:\n%s", code, tt.says, out)
			}
			if rc.snapshot(t) != before {
				t.Fatal("something was written")
			}
		})
	}
}

// TestRestoreSignalLongName: a signal name of 249 bytes is restored (its
// temporary name is short).
func TestRestoreSignalLongName(t *testing.T) {
	rc := newRestoreCase(t)
	prefix := strings.Repeat("s", 235) + "_"
	contract := strings.Replace(storyContract, `signal: "account_balance_snapshot_{batch_id}.flag"`, `signal: "`+prefix+`{batch_id}.flag"`, 1)
	if err := os.WriteFile(rc.contract, []byte(contract), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range rc.evs {
		if rc.evs[i].Type.IsSignal() {
			rc.evs[i].Object = prefix + rc.evs[i].BatchID + ".flag"
		}
	}
	rc.writeEvents(t)
	long := prefix + "20260930.flag"
	if code, o, errOut := rc.restore(t); code != exitOK || o.Outcome != restore.WouldRestore || o.Signal != long {
		t.Fatalf("dry run: exit %d, %+v, %s", code, o, errOut)
	}
	if code, o, errOut := rc.restore(t, "--apply", "--reason", "r"); code != exitOK || o.Outcome != restore.Restored {
		t.Fatalf("apply of a %d-byte signal name: exit %d, %+v, %s", len(long), code, o, errOut)
	}
	if _, err := os.Stat(filepath.Join(rc.recv, long)); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreSignalBadTemplates: a template that is not one file name in
// the receiver directory is refused at load, naming the file and line.
func TestRestoreSignalBadTemplates(t *testing.T) {
	for _, tt := range []struct{ name, signal, want string }{
		{"sub directory", `"sub/x_{batch_id}.flag"`, `abs.yaml:6: signal: "sub/x_{batch_id}.flag": contains '/'`},
		{"up a directory", `"../x_{batch_id}.flag"`, `abs.yaml:6: signal: "../x_{batch_id}.flag": contains '/'`},
		{"absolute", `"/tmp/x_{batch_id}.flag"`, `abs.yaml:6: signal: "/tmp/x_{batch_id}.flag": contains '/'`},
		{"the data file's name", `"account_balance_snapshot_{yyyymmdd}.csv"`, `abs.yaml:6: signal: "account_balance_snapshot_{yyyymmdd}.csv" renders "account_balance_snapshot_20260930.csv"`},
		{"over 255 bytes", `"` + strings.Repeat("x", 250) + `{batch_id}"`, `renders a name of 258 bytes, over the 255-byte limit`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := newRestoreCase(t)
			rc.writeEvents(t)
			contract := strings.Replace(storyContract, `signal: "account_balance_snapshot_{batch_id}.flag"`, "signal: "+tt.signal, 1)
			if err := os.WriteFile(rc.contract, []byte(contract), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := rc.restore(t, "--apply", "--reason", "r")
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, %s; want exit 2 with %q", code, errOut, tt.want)
			}
		})
	}
}

// shellWords splits a command printed by shellCommand: words separated by
// spaces; a single quote opens and closes a quoted part, and a backslash
// outside one escapes the next character.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, any := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			in, any = !in, true
		case c == '\\' && !in && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == ' ' && !in:
			if any || cur.Len() > 0 {
				words = append(words, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteByte(c)
		}
	}
	if in {
		t.Fatalf("unbalanced quotes in %q", s)
	}
	if any || cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

// nextOf returns the printed next step of a text output, split into its
// arguments after "handoff".
func nextOf(t *testing.T, out string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "next: "); ok {
			w := shellWords(t, cmd)
			if len(w) < 2 || w[0] != "handoff" {
				t.Fatalf("next step %q is not a handoff command", cmd)
			}
			return w[1:]
		}
	}
	t.Fatalf("no next step printed:\n%s", out)
	return nil
}

// TestRestoreNextStepsRun: each printed next step runs as printed: the dry
// run's apply, then the apply's verify (before and after the consumer).
func TestRestoreNextStepsRun(t *testing.T) {
	rc := newRestoreCase(t)
	// A receiver path with a space and a quote: the commands must quote it.
	recv := filepath.Join(rc.dir, "in box's")
	if err := os.Rename(rc.recv, recv); err != nil {
		t.Fatal(err)
	}
	rc.recv = recv
	rc.writeEvents(t)
	code, out, errOut := runArgs("restore-signal", "--batch", storyBatch, "--dir", rc.recv, "--contract", rc.contract, "--events", rc.events, "--as-of", "2026-10-03T00:00:00Z", "--settle", "0")
	if code != exitOK {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runArgs(nextOf(t, out)...)
	if code != exitOK || !strings.Contains(out, "restored "+storyFlag) {
		t.Fatalf("the dry run's next step: exit %d\n%s%s", code, out, errOut)
	}
	verify := nextOf(t, out)
	if !slices.Contains(verify, "--contract") {
		t.Fatalf("verify step without --contract: %q", verify)
	}
	code, out, errOut = runArgs(append(slices.Clone(verify[:len(verify)-2]), "--format", "json")...)
	var v verifyOut
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitNotDelivered || !slices.Equal(v.failed(), []string{"consumed_once", "consumed_rows_match", "delivered"}) {
		t.Fatalf("the apply's next step before the consumer: exit %d, %+v, %v\n%s", code, v, err, errOut)
	}
	f, err := os.OpenFile(rc.events, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, typ := range []model.EventType{model.BatchIdentified, model.ConsumeSucceeded} {
		fmt.Fprintf(f, `{"spec":"handoff/v1","event_id":"c-%d","type":"%s","time":"2026-10-02T09:0%d:00Z","pipeline":"%s","business_date":"2026-09-30","batch_id":"20260930","system":"consumer","rows":500}`+"\n", i, typ, i, storyPipeline)
	}
	f.Close()
	code, out, errOut = runArgs(verify...)
	if code != exitOK || !strings.Contains(out, "every check passed") {
		t.Fatalf("the apply's next step after the consumer: exit %d\n%s%s", code, out, errOut)
	}
}

package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of cmd/handoff/testdata")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestRemedyTextGolden fixes the text the operator reads: the dry run, a
// refusal, and verify, on the seed case from a file.
func TestRemedyTextGolden(t *testing.T) {
	rc := newRestoreCase(t)
	rc.writeEvents(t)
	text := func(args ...string) string {
		var out, errb bytes.Buffer
		run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return strings.ReplaceAll(strings.ReplaceAll(out.String(), rc.recv, "RECEIVER"), rc.dir, "DIR")
	}
	common := []string{"--batch", storyBatch, "--dir", rc.recv, "--contract", rc.contract, "--events", rc.events, "--as-of", "2026-10-03T00:00:00Z", "--settle", "0"}
	golden(t, "restore-dry-run.txt", text(append([]string{"restore-signal"}, common...)...))

	changed := bytes.Clone(rc.data)
	changed[len(changed)-2] ^= 1
	rc.writeData(t, storyData, changed)
	golden(t, "restore-refused.txt", text(append([]string{"restore-signal"}, common...)...))
	rc.writeData(t, storyData, rc.data)

	if code, o, errOut := rc.restore(t, "--apply", "--reason", "r"); code != exitOK {
		t.Fatalf("apply: %d %+v %s", code, o, errOut)
	}
	// As of now: the restore was recorded now, after the dry run's as-of.
	golden(t, "verify-not-consumed.txt", text("verify", "--batch", storyBatch, "--dir", rc.recv, "--contract", rc.contract, "--events", rc.events))
}

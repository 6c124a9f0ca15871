package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/handoff-dev/handoff/internal/testenv"
)

// TestMain lets the scripts of testdata/script run handoff as a command:
// the test binary is handoff when invoked under that name.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"handoff": func() {
			os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// TestScripts runs the command-line conventions as scripts
// (testdata/script/*.txtar): exit codes, messages and flag spellings, as
// a user types them, against the real ClickHouse. The scripts see:
// $CH_ADDR; $CH_DB, a database holding the seed case
// (deploy/demo/seed-case.jsonl); $CH_MISSING, a database name with no
// tables; $CONTRACTS, deploy/contracts.
func TestScripts(t *testing.T) {
	addr := testenv.ClickHouseAddr(t)
	_, _, db := storeTwice(t, "script", readSeed(t))
	contracts, err := filepath.Abs("../../deploy/contracts")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("CH_ADDR", addr)
			e.Setenv("CH_DB", db)
			e.Setenv("CH_MISSING", testenv.Name("handoff_missing"))
			e.Setenv("CONTRACTS", contracts)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": exitCodeCmd,
		},
	})
}

// exitCodeCmd is the scripts' `exitcode N PROGRAM ARGS...`: run the
// program (its output kept for stdout and stderr) and check that it
// exits with N. `! exec` would only say "not 0", and the codes are the
// point of these conventions.
func exitCodeCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode %q: want a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

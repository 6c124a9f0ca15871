package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion is `handoff version` (and `handoff --version`): the module
// version and the VCS revision of the build, from the build information
// the Go toolchain embeds.
func runVersion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("handoff version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff version\n\nPrint the module version and the VCS revision handoff was built from.")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	info, _ := debug.ReadBuildInfo()
	_, err := fmt.Fprintln(stdout, versionLine(info))
	return err
}

// versionLine formats the build information: "handoff VERSION (revision
// REV[, modified], TIME, GOVERSION)". A build without VCS stamping (go
// test, -buildvcs=false) says "revision unknown".
func versionLine(info *debug.BuildInfo) string {
	if info == nil {
		return "handoff (devel) (no build information)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	rev, at, modified := "unknown", "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	out := "handoff " + version + " (revision " + rev
	if modified {
		out += ", modified"
	}
	if at != "" {
		out += ", " + at
	}
	return out + ", " + info.GoVersion + ")"
}

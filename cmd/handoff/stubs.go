package main

// Placeholders until the ingest and emit commands land; each is replaced by
// its own file (ingest.go, emit.go, diagnose.go).

import (
	"context"
	"errors"
	"io"
)

func runIngestCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("not built yet")
}

func runEmitCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("not built yet")
}

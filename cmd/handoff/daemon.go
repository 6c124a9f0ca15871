package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/handoff-dev/handoff/internal/cliflag"
)

// daemonSpec describes a long-running command (ingest, detect, notify) to
// startDaemon: its name and one-line description for the usage, its
// configuration's flags and check, and where it serves metrics.
type daemonSpec struct {
	name, about string
	register    func(*flag.FlagSet)
	validate    func() error
	metricsAddr func() string // read after the flags are parsed
}

// daemon is what startDaemon set up: the logger, the registry (with the Go
// and process collectors) and stop, which ends the metrics server.
type daemon struct {
	log  *slog.Logger
	reg  *prometheus.Registry
	stop func()
}

// startDaemon parses the command's flags and the log flags, validates the
// configuration (a usage error when wrong), builds the logger and serves
// /metrics and /healthz. Every such command thus has the same -h, the same
// log flags and the same metrics endpoint.
func startDaemon(spec daemonSpec, args []string, stderr io.Writer) (*daemon, error) {
	fs := flag.NewFlagSet("handoff "+spec.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	spec.register(fs)
	var prof cliflag.CPUProfile
	prof.RegisterFlags(fs)
	logLevel := fs.String("log-level", envOr("HANDOFF_LOG_LEVEL", "info"), "log level: debug, info, warn, error (HANDOFF_LOG_LEVEL)")
	logFormat := fs.String("log-format", envOr("HANDOFF_LOG_FORMAT", "text"), "log format: text or json (HANDOFF_LOG_FORMAT)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: handoff %s [flags]\n", spec.name)
		fmt.Fprintln(stderr, "\n"+spec.about)
		fmt.Fprintln(stderr, "Every flag has a HANDOFF_* variable (named in its help); flags win.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := spec.validate(); err != nil {
		return nil, usageError("%v", err)
	}
	log, err := ingestLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return nil, usageError("%v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stopProfile, err := cpuProfileTo(prof.Path)
	if err != nil {
		return nil, err
	}
	stop, err := serveMetrics(spec.metricsAddr(), reg, log)
	if err != nil {
		_ = stopProfile()
		return nil, err
	}
	return &daemon{log: log, reg: reg, stop: func() {
		stop()
		if err := stopProfile(); err != nil {
			log.Warn("writing the CPU profile failed", "path", prof.Path, "err", err)
		}
	}}, nil
}

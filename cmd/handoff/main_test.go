package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// commandFlags is, per command, the flags its documentation promises
// (docs/configuration.md, docs/). Written out here rather than read from the flag sets,
// so that a renamed or dropped flag fails this test instead of passing with
// it. Commands may have more flags than listed.
var commandFlags = map[string][]string{
	"diagnose": {"events", "contract", "as-of", "format", "batch", "strict", "progress", "clickhouse-addr", "clickhouse-database", "clickhouse-user", "clickhouse-password", "pipeline", "from", "to"},
	"ingest": {"kafka-brokers", "topic", "dlq-topic", "group", "topic-partitions", "clickhouse-addr", "clickhouse-database", "clickhouse-cluster", "retain-months",
		"clickhouse-user", "clickhouse-password", "batch-size", "flush-interval", "retry-max", "shutdown-timeout",
		"metrics-addr", "log-level", "log-format", "clickhouse-log-queries", "cpuprofile"},
	"emit": {"kafka-brokers", "topic", "timeout", "stdin", "type", "pipeline", "business-date", "batch-id", "system",
		"component", "object", "rows", "bytes", "checksum", "attempt", "error", "event-id", "time", "attr"},
	"broker": {"port", "data-dir", "partitions"},
	"notify": {"kafka-brokers", "findings-topic", "dlq-topic", "group", "state-topic", "topic-partitions", "alertmanager-url", "webhook-url",
		"webhook-secret", "serve-url", "lease", "resend", "retry-for", "retry-max", "request-timeout", "since", "for", "metrics-addr", "log-level", "log-format", "cpuprofile"},
	"detect": {"kafka-brokers", "topic", "findings-topic", "group", "ingest-group", "results-group", "clickhouse-addr", "clickhouse-cluster",
		"clickhouse-database", "clickhouse-user", "clickhouse-password", "contract", "expect-from", "retain-days", "tick",
		"heartbeat", "instance", "session-timeout", "metrics-addr", "now", "log-level", "log-format", "cpuprofile"},
	"restore-signal": {"batch", "dir", "contract", "events", "clickhouse", "database", "as-of", "format", "settle",
		"apply", "reason", "kafka-brokers", "topic", "timeout"},
	"openlineage": {"file", "contract", "kafka-brokers", "openlineage-topic", "group", "topic", "dlq-topic", "timeout", "print"},
	"watch":       {"role", "dir", "contract", "settle", "rescan", "component", "ledger", "once", "kafka-brokers", "topic", "timeout", "log-level"},
	"verify":      {"batch", "dir", "contract", "events", "clickhouse", "database", "as-of", "format", "wait", "poll"},
	"backfill": {"from", "to", "pipeline", "as-of", "contract", "publish", "dry-run", "format", "clickhouse-addr",
		"clickhouse-database", "kafka-brokers", "diagnoses-topic", "workers", "unit-rows", "progress-interval"},
	"serve":   {"addr", "clickhouse-addr", "clickhouse-database", "clickhouse-user", "clickhouse-password", "contract", "query-timeout"},
	"version": {},
	"contracts": {"from", "to", "pipeline", "events", "out", "diff", "zone", "clickhouse-addr", "clickhouse-database",
		"clickhouse-user", "clickhouse-password"},
	"findings": {"pipeline", "from", "to", "state", "kind", "limit", "format", "fail-on-open", "group-by", "as-of", "clickhouse-addr",
		"clickhouse-database", "clickhouse-user", "clickhouse-password"},
}

// TestCommandHelp checks -h of every command as docs/configuration.md documents it:
// exit 0, nothing on standard output, and on standard error a usage that
// names the command and each of its documented flags.
func TestCommandHelp(t *testing.T) {
	if len(commands()) != len(commandFlags) {
		t.Errorf("%d commands, but %d have documented flags here: add the new command's flags", len(commands()), len(commandFlags))
	}
	for _, c := range commands() {
		for _, h := range []string{"-h", "--help"} {
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{c.name, h}, strings.NewReader(""), &out, &errb)
			if code != exitOK || out.Len() != 0 {
				t.Errorf("handoff %s %s: exit %d, stdout %q; want exit 0 and the usage on stderr only", c.name, h, code, out.String())
			}
			usage := errb.String()
			if !strings.Contains(usage, "Usage: handoff "+c.name) {
				t.Errorf("handoff %s %s: usage does not start with %q:\n%s", c.name, h, "Usage: handoff "+c.name, usage)
			}
			flags, ok := commandFlags[c.name]
			if !ok {
				t.Errorf("handoff %s: no documented flags in commandFlags", c.name)
			}
			for _, f := range flags {
				// The flag package prints "-name"; diagnose prints "--name".
				if !strings.Contains(usage, "-"+f+" ") && !strings.Contains(usage, "-"+f+"\n") {
					t.Errorf("handoff %s %s: usage does not list --%s:\n%s", c.name, h, f, usage)
				}
			}
		}
	}
}

// TestTopLevelUsage checks the usage of the binary itself: asked for, it is
// success; given nothing or an unknown command, it is a usage error. Either
// way it names every command.
func TestTopLevelUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"-h"}, exitOK},
		{[]string{"--help"}, exitOK},
		{[]string{"help"}, exitOK},
		{nil, exitUsage},
		{[]string{"no-such-command"}, exitUsage},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
		if code != tt.code || out.Len() != 0 {
			t.Errorf("handoff %v: exit %d, stdout %q; want exit %d, usage on stderr", tt.args, code, out.String(), tt.code)
		}
		for _, name := range []string{"Usage: handoff COMMAND", "diagnose", "ingest", "emit", "broker"} {
			if !strings.Contains(errb.String(), name) {
				t.Errorf("handoff %v: usage lacks %q:\n%s", tt.args, name, errb.String())
			}
		}
	}
}

// TestEveryCommandRejectsBadFlagsAndStrayArguments checks the flag handling
// all commands share: a bad flag or a stray argument is a usage error
// (exit 2) that names the offender, and neither starts any work.
func TestEveryCommandRejectsBadFlagsAndStrayArguments(t *testing.T) {
	for _, c := range commands() {
		for _, tt := range []struct {
			args []string
			say  string
		}{
			{[]string{"--no-such-flag"}, "no-such-flag"},
			{[]string{"stray"}, "unexpected arguments: stray"},
		} {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{c.name}, tt.args...), strings.NewReader(""), &out, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), tt.say) {
				t.Errorf("handoff %s %v: exit %d, want %d; stderr %q should mention %q", c.name, tt.args, code, exitUsage, errb.String(), tt.say)
			}
		}
	}
}

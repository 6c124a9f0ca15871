package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestEmitExitCodes: bad input (flags, broker address, topic name, an
// oversized or invalid line) is a usage error (exit 2) whose message names
// the flag or line and the reason; a broker that does not answer is a
// runtime failure (exit 3). None of the exit-2 cases needs a broker: they
// are refused before anything is sent.
func TestEmitExitCodes(t *testing.T) {
	for _, name := range []string{"HANDOFF_KAFKA_BROKERS", "HANDOFF_TOPIC", "HANDOFF_EMIT_TIMEOUT", "HANDOFF_SYSTEM", "HANDOFF_COMPONENT"} {
		t.Setenv(name, "")
	}
	event := []string{"--type", "job.succeeded", "--pipeline", "p", "--business-date", "2026-09-30", "--batch-id", "20260930", "--system", "producer"}
	// Nothing listens on port 1: connecting is refused at once.
	dead := []string{"--kafka-brokers", "127.0.0.1:1"}
	tooLong := `{"type":"job.succeeded","attrs":{"x":"` + strings.Repeat("x", 2<<20) + `"}}` + "\n"
	for _, tt := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		say   []string
	}{
		{"timeout zero", append([]string{"--timeout", "0"}, append(dead, event...)...), "", exitUsage, []string{"--timeout", "want a positive duration"}},
		{"timeout negative", append([]string{"--timeout", "-1s"}, append(dead, event...)...), "", exitUsage, []string{"--timeout", "-1s"}},
		{"port out of range", append([]string{"--kafka-brokers", "127.0.0.1:99999"}, event...), "", exitUsage, []string{"--kafka-brokers", `port "99999"`}},
		{"broker without port", append([]string{"--kafka-brokers", "localhost"}, event...), "", exitUsage, []string{"--kafka-brokers", "want host:port"}},
		{"no brokers", event, "", exitUsage, []string{"--kafka-brokers (HANDOFF_KAFKA_BROKERS): required"}},
		{"invalid topic", append([]string{"--topic", "bad topic!"}, append(dead, event...)...), "", exitUsage, []string{"--topic", "character ' '"}},
		{"oversized line", append([]string{"--stdin"}, dead...), "\n" + tooLong, exitUsage, []string{"line 2", "longer than the"}},
		{"invalid line", append([]string{"--stdin"}, dead...), `{"type":"job.exploded"}` + "\n", exitUsage, []string{"line 1", "type"}},
		{"unknown type", append([]string{"--type", "job.exploded", "--pipeline", "p", "--system", "producer"}, dead...), "", exitUsage, []string{"type"}},
		{"bad rows", append(append([]string{"--rows", "many"}, dead...), event...), "", exitUsage, []string{"--rows", "whole number"}},
		{"broker unreachable", append([]string{"--timeout", "2s"}, append(dead, event...)...), "", exitFailure, []string{"127.0.0.1:1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"emit"}, tt.args...), strings.NewReader(tt.stdin), &out, &errb)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %.300s", code, tt.code, errb.String())
			}
			for _, s := range tt.say {
				if !strings.Contains(errb.String(), s) {
					t.Errorf("stderr %.300q does not mention %q", errb.String(), s)
				}
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing: no event was acknowledged", out.String())
			}
		})
	}
}

package main

import (
	"runtime/debug"
	"testing"
)

// TestVersionLine: the version line says the module version and the VCS
// revision when the build has them, and says so when it does not.
func TestVersionLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6d24305832fe"}, {Key: "vcs.time", Value: "2026-12-01T09:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"handoff v1.4.0 (revision 6d24305832fe, 2026-12-01T09:00:00Z, go1.26.8)"},
		{"modified tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"handoff (devel) (revision abc, modified, go1.26.8)"},
		{"no VCS stamp", &debug.BuildInfo{GoVersion: "go1.26.8"}, "handoff (devel) (revision unknown, go1.26.8)"},
		{"no build information", nil, "handoff (devel) (no build information)"},
	} {
		if got := versionLine(tt.info); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

package chconfig_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/store/chconfig"
)

// TestServiceEnvThenFlags: every command reads ClickHouse's place the same
// way: defaults, then HANDOFF_CLICKHOUSE_*, then the --clickhouse-* flags;
// the old spellings only where asked for, with a warning.
func TestServiceEnvThenFlags(t *testing.T) {
	for _, tt := range []struct {
		name    string
		environ map[string]string
		args    []string
		opts    []chconfig.FlagOption
		want    chconfig.Service
		warn    string
		bad     bool
	}{
		{"defaults", nil, nil, nil, chconfig.Service{Addr: chconfig.DefaultAddr, Database: "handoff", User: "default"}, "", false},
		{"environment", map[string]string{"HANDOFF_CLICKHOUSE_ADDR": "ch:9000", "HANDOFF_CLICKHOUSE_DATABASE": "h2", "HANDOFF_CLICKHOUSE_CLUSTER": "c"}, nil, nil,
			chconfig.Service{Addr: "ch:9000", Database: "h2", User: "default", Cluster: "c"}, "", false},
		{"flags win", map[string]string{"HANDOFF_CLICKHOUSE_ADDR": "ch:9000"}, []string{"--clickhouse-addr", "x:1", "--clickhouse-database", "d", "--clickhouse-user", "r"}, nil,
			chconfig.Service{Addr: "x:1", Database: "d", User: "r"}, "", false},
		{"cluster flag", nil, []string{"--clickhouse-cluster", "prod"}, []chconfig.FlagOption{chconfig.WithCluster()},
			chconfig.Service{Addr: chconfig.DefaultAddr, Database: "handoff", User: "default", Cluster: "prod"}, "", false},
		{"no cluster flag unless asked", nil, []string{"--clickhouse-cluster", "prod"}, nil, chconfig.Service{}, "", true},
		{"old spellings", nil, []string{"--clickhouse", "x:1", "--database", "d"}, []chconfig.FlagOption{chconfig.WithLegacySpellings(nil)},
			chconfig.Service{Addr: "x:1", Database: "d", User: "default"}, "use --clickhouse-addr", false},
		{"no old spellings unless asked", nil, []string{"--database", "d"}, nil, chconfig.Service{}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c struct{ ClickHouse chconfig.Service }
			// A nil Environment would read the process's: the test's own
			// HANDOFF_CLICKHOUSE_ADDR must not decide the defaults.
			environ := tt.environ
			if environ == nil {
				environ = map[string]string{}
			}
			if err := env.ParseWithOptions(&c, env.Options{Environment: environ}); err != nil {
				t.Fatal(err)
			}
			var warn strings.Builder
			opts := tt.opts
			if tt.warn != "" {
				opts = []chconfig.FlagOption{chconfig.WithLegacySpellings(&warn)}
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(&strings.Builder{})
			c.ClickHouse.RegisterFlags(fs, opts...)
			err := fs.Parse(tt.args)
			if tt.bad {
				if err == nil {
					t.Fatalf("%q parsed", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ClickHouse != tt.want || !strings.Contains(warn.String(), tt.warn) {
				t.Errorf("%+v, warning %q; want %+v and %q", c.ClickHouse, warn.String(), tt.want, tt.warn)
			}
		})
	}
}

// TestServiceCheck: what cannot be handoff's ClickHouse is refused naming
// the flag and the variable.
func TestServiceCheck(t *testing.T) {
	for _, tt := range []struct {
		s   chconfig.Service
		say string
	}{
		{chconfig.Service{Addr: "a:1", Database: "handoff"}, ""},
		{chconfig.Service{Addr: " ", Database: "handoff"}, "--clickhouse-addr (HANDOFF_CLICKHOUSE_ADDR): empty"},
		{chconfig.Service{Addr: "a:1", Database: "x; DROP DATABASE y"}, "--clickhouse-database (HANDOFF_CLICKHOUSE_DATABASE)"},
		{chconfig.Service{Addr: "a:1", Database: "handoff", Cluster: "c ON CLUSTER x"}, "--clickhouse-cluster (HANDOFF_CLICKHOUSE_CLUSTER)"},
	} {
		err := tt.s.Check()
		if tt.say == "" && err != nil || tt.say != "" && (err == nil || !strings.Contains(err.Error(), tt.say)) {
			t.Errorf("%+v: Check() = %v, want %q", tt.s, err, tt.say)
		}
	}
}

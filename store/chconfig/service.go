// Package chconfig is where handoff's ClickHouse is, as every command
// takes it: one configuration (address, database, credentials, cluster)
// from the HANDOFF_CLICKHOUSE_* variables and one registration of the
// --clickhouse-* flags. (It is not part of store/chconn because the
// schema's checks it applies would make chconn, which the tests' helpers
// import, import the schema.)
package chconfig

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
)

// DefaultAddr is where the local services (deploy/services, make demo)
// serve ClickHouse's native protocol, the default of every command.
const DefaultAddr = "127.0.0.1:19000"

// Service is where handoff's ClickHouse is, the same for every command:
// the HANDOFF_CLICKHOUSE_* variables (parsed with the command's
// configuration, as a named field), then the --clickhouse-* flags of
// RegisterFlags, which win.
type Service struct {
	Addr     string `env:"HANDOFF_CLICKHOUSE_ADDR" envDefault:"127.0.0.1:19000"`
	Database string `env:"HANDOFF_CLICKHOUSE_DATABASE" envDefault:"handoff"`
	User     string `env:"HANDOFF_CLICKHOUSE_USER" envDefault:"default"`
	Password string `env:"HANDOFF_CLICKHOUSE_PASSWORD"`
	// Cluster is the <remote_servers> name of a cluster (docs/cluster.md);
	// empty: one server. Only the commands that take --clickhouse-cluster
	// (RegisterFlags with WithCluster) use it.
	Cluster string `env:"HANDOFF_CLICKHOUSE_CLUSTER"`
}

// FlagOption changes what RegisterFlags defines.
type FlagOption func(*flagOptions)

type flagOptions struct {
	cluster bool
	warn    io.Writer
}

// WithCluster defines --clickhouse-cluster too.
func WithCluster() FlagOption { return func(o *flagOptions) { o.cluster = true } }

// WithLegacySpellings accepts --clickhouse ADDR and --database DB, the
// spellings of diagnose, restore-signal and verify before every command
// took --clickhouse-addr and --clickhouse-database, for one release, with
// a warning on w naming the new flag.
func WithLegacySpellings(w io.Writer) FlagOption { return func(o *flagOptions) { o.warn = w } }

// RegisterFlags defines the --clickhouse-* flags on fs over s's current
// values.
func (s *Service) RegisterFlags(fs *flag.FlagSet, opts ...FlagOption) {
	var o flagOptions
	for _, f := range opts {
		f(&o)
	}
	fs.StringVar(&s.Addr, "clickhouse-addr", s.Addr, "ClickHouse native protocol host:port[,host:port...] (HANDOFF_CLICKHOUSE_ADDR)")
	fs.StringVar(&s.Database, "clickhouse-database", s.Database, "ClickHouse database of handoff's tables (HANDOFF_CLICKHOUSE_DATABASE)")
	fs.StringVar(&s.User, "clickhouse-user", s.User, "ClickHouse user; readers need only readonly=1 (HANDOFF_CLICKHOUSE_USER)")
	// A Secret: -h and a mistyped flag's usage never print the value.
	fs.Var(cliflag.Secret{P: &s.Password}, "clickhouse-password", "ClickHouse password (HANDOFF_CLICKHOUSE_PASSWORD; prefer the variable)")
	if o.cluster {
		fs.StringVar(&s.Cluster, "clickhouse-cluster", s.Cluster, "ClickHouse cluster (<remote_servers> name) of the replicated and Distributed tables; empty: a single server (HANDOFF_CLICKHOUSE_CLUSTER)")
	}
	if o.warn != nil {
		cliflag.Deprecated(fs, "clickhouse", "clickhouse-addr", o.warn)
		cliflag.Deprecated(fs, "database", "clickhouse-database", o.warn)
	}
}

// Check refuses, before anything connects, an empty address, a database
// name that could not be handoff's and a bad cluster name, naming the flag
// and the variable.
func (s *Service) Check() error {
	if strings.TrimSpace(s.Addr) == "" {
		return fmt.Errorf("--clickhouse-addr (HANDOFF_CLICKHOUSE_ADDR): empty: host:port of ClickHouse's native protocol, e.g. %s", DefaultAddr)
	}
	if err := schema.CheckDatabase(s.Database); err != nil {
		return fmt.Errorf("--clickhouse-database (HANDOFF_CLICKHOUSE_DATABASE): %w", err)
	}
	if err := s.Layout().Check(); err != nil {
		return fmt.Errorf("--clickhouse-cluster (HANDOFF_CLICKHOUSE_CLUSTER): %w", err)
	}
	return nil
}

// Layout is the schema layout the cluster selects.
func (s *Service) Layout() schema.Layout { return schema.Layout{Cluster: s.Cluster} }

// Config is the connection configuration of s, for Open.
func (s *Service) Config() chconn.Config {
	return chconn.Config{Addr: s.Addr, User: s.User, Password: s.Password}
}

// Open connects to s (chconn.Open with s.Config()).
func (s *Service) Open(ctx context.Context) (driver.Conn, error) {
	return chconn.Open(ctx, s.Config())
}

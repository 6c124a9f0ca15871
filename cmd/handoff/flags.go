package main

import (
	"context"
	"flag"
	"time"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/schema"
)

// checkFormat checks an output format flag (text or json), filling the
// default text.
func checkFormat(format *string) error {
	switch *format {
	case "":
		*format = "text"
	case "text", "json":
	default:
		return usageError("--format %q: want text or json", *format)
	}
	return nil
}

// parseAsOf parses an --as-of flag: an RFC 3339 time, or now when empty.
func parseAsOf(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now, nil
	}
	t, err := cliflag.ParseTime("as-of", s)
	if err != nil {
		return time.Time{}, usageError("%v", err)
	}
	return t, nil
}

// clickhouseConfig is where a command that reads the stored history finds
// ClickHouse: the HANDOFF_CLICKHOUSE_* variables (parsed with the
// command's configuration, as a named field: env skips an embedded
// unexported struct), then the --clickhouse-* flags, which win.
type clickhouseConfig struct {
	Addr     string `env:"HANDOFF_CLICKHOUSE_ADDR" envDefault:"127.0.0.1:19000"`
	Database string `env:"HANDOFF_CLICKHOUSE_DATABASE" envDefault:"handoff"`
	User     string `env:"HANDOFF_CLICKHOUSE_USER"`
	Password string `env:"HANDOFF_CLICKHOUSE_PASSWORD"`
}

// register defines the --clickhouse-* flags on fs over c's current values.
func (c *clickhouseConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "clickhouse-addr", c.Addr, "ClickHouse native protocol host:port (env HANDOFF_CLICKHOUSE_ADDR)")
	fs.StringVar(&c.Database, "clickhouse-database", c.Database, "ClickHouse database of handoff's tables (env HANDOFF_CLICKHOUSE_DATABASE)")
	fs.StringVar(&c.User, "clickhouse-user", c.User, "ClickHouse user; a readonly=1 user is enough (env HANDOFF_CLICKHOUSE_USER)")
	fs.Var(cliflag.Secret{P: &c.Password}, "clickhouse-password", "ClickHouse password (env HANDOFF_CLICKHOUSE_PASSWORD)")
}

// check refuses a database name that could not be handoff's, before
// anything connects.
func (c *clickhouseConfig) check() error {
	if err := schema.CheckDatabase(c.Database); err != nil {
		return usageError("--clickhouse-database: %v", err)
	}
	return nil
}

// open connects to ClickHouse.
func (c *clickhouseConfig) open(ctx context.Context) (chconn.Conn, error) {
	return chconn.Open(ctx, chconn.Config{Addr: c.Addr, User: c.User, Password: c.Password})
}

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
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usageError("--as-of %q: want an RFC 3339 time such as 2026-10-03T00:00:00Z", s)
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
	fs.StringVar(&c.Password, "clickhouse-password", c.Password, "ClickHouse password (env HANDOFF_CLICKHOUSE_PASSWORD)")
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

// textZones returns the zone text output shows beside UTC for a pipeline:
// the --tz zone when given, else the pipeline's contract's (contracts, a
// --contract path, may be empty: UTC alone).
func textZones(contracts, tz string) (func(pipeline string) *time.Location, error) {
	over, err := cliflag.ParseZone(tz)
	if err != nil {
		return nil, usageError("--tz: %v", err)
	}
	if over != nil {
		return func(string) *time.Location { return over }, nil
	}
	set, err := loadContracts(contracts)
	if err != nil {
		return nil, err
	}
	return set.Zone, nil
}

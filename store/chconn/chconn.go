// Package chconn opens ClickHouse connections the way every part of handoff
// needs them: native protocol only (the HTTP transport of clickhouse-go does
// not work with ClickHouse 18.16), with a ping so a bad address fails early
// with a message saying what to check.
package chconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Config says where ClickHouse is.
type Config struct {
	// Addr is host:port of the native protocol (default port 9000; the
	// local services of deploy/services use 127.0.0.1:19000). Several
	// addresses may be given separated by commas.
	Addr     string
	User     string // default "default"
	Password string
	// DialTimeout bounds connecting (default 5s).
	DialTimeout time.Duration
	// ReadTimeout bounds waiting for the server on one read (default 5m).
	ReadTimeout time.Duration
	// MaxOpenConns bounds the pool (default 8).
	MaxOpenConns int
	// Compression of blocks sent and received: "none" (default; fastest
	// on loopback and fast networks), "lz4" or "zstd".
	Compression string
	// Settings are query settings sent with every query (for example
	// insert_distributed_sync on a cluster: schema.Layout.InsertSettings).
	Settings map[string]any
	// Dial, when set, replaces the TCP dialer (tests use it to route
	// through a proxy).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Open connects to ClickHouse over the native protocol and pings it. The
// connection uses the server's default database: handoff always names its
// tables with the database (db.events), so the database need not exist yet.
func Open(ctx context.Context, cfg Config) (driver.Conn, error) {
	if strings.TrimSpace(cfg.Addr) == "" {
		return nil, fmt.Errorf("clickhouse: no address given: set HANDOFF_CLICKHOUSE_ADDR or --clickhouse-addr (host:port of the native protocol, e.g. 127.0.0.1:19000)")
	}
	var addrs []string
	for _, a := range strings.Split(cfg.Addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	user := cfg.User
	if user == "" {
		user = "default"
	}
	dialTimeout := cfg.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = 5 * time.Second
	}
	readTimeout := cfg.ReadTimeout
	if readTimeout <= 0 {
		readTimeout = 5 * time.Minute
	}
	maxOpen := cfg.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = 8
	}
	var method clickhouse.CompressionMethod
	switch strings.ToLower(cfg.Compression) {
	case "", "none":
		method = clickhouse.CompressionNone
	case "lz4":
		method = clickhouse.CompressionLZ4
	case "zstd":
		method = clickhouse.CompressionZSTD
	default:
		return nil, fmt.Errorf("clickhouse compression %q: want none, lz4 or zstd", cfg.Compression)
	}
	opts := &clickhouse.Options{
		Protocol:        clickhouse.Native,
		Addr:            addrs,
		Auth:            clickhouse.Auth{Database: "default", Username: user, Password: cfg.Password},
		DialTimeout:     dialTimeout,
		ReadTimeout:     readTimeout,
		MaxOpenConns:    maxOpen,
		MaxIdleConns:    maxOpen,
		ConnMaxLifetime: time.Hour,
		Compression:     &clickhouse.Compression{Method: method},
		ClientInfo: clickhouse.ClientInfo{
			Products: []struct{ Name, Version string }{{Name: "handoff", Version: "v1"}},
		},
	}
	if len(cfg.Settings) > 0 {
		opts.Settings = clickhouse.Settings(cfg.Settings)
	}
	if cfg.Dial != nil {
		opts.DialContext = cfg.Dial
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse %s: open: %w", cfg.Addr, err)
	}
	pctx, cancel := context.WithTimeout(ctx, dialTimeout+5*time.Second)
	defer cancel()
	if err := conn.Ping(pctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse %s: not answering over the native protocol: %w (is the server running? locally: bash deploy/services/up.sh)", cfg.Addr, err)
	}
	return conn, nil
}

// The driver's connection types, under the names the rest of handoff uses:
// store/ is the one home of ClickHouse, so no package outside it imports
// the driver, yet a read or a test can still hold a connection or rows.
type (
	// Conn is an open ClickHouse connection (Open returns one).
	Conn = driver.Conn
	// Rows are the rows of a query, read with Next and Scan.
	Rows = driver.Rows
	// Row is one row of QueryRow.
	Row = driver.Row
)

// WithSettings returns ctx carrying query settings (for example
// max_execution_time) for the queries run with it.
func WithSettings(ctx context.Context, settings map[string]any) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings(settings)))
}

// ClickHouse error codes of a missing database or table.
const (
	codeUnknownTable    = 60
	codeUnknownDatabase = 81
)

// MissingSchema reports whether err is ClickHouse saying that a database
// or a table does not exist (someone dropped it).
func MissingSchema(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && (ex.Code == codeUnknownTable || ex.Code == codeUnknownDatabase)
}

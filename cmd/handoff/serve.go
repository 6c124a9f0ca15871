package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/handoff-dev/handoff/query/dash"
	"github.com/handoff-dev/handoff/query/serve"
	"github.com/handoff-dev/handoff/store/chconfig"
)

// serveConfig is serve's configuration: environment variables first, then
// flags, which win.
type serveConfig struct {
	Addr         string `env:"HANDOFF_SERVE_ADDR" envDefault:"127.0.0.1:8080"`
	ClickHouse   chconfig.Service
	Contracts    string        `env:"HANDOFF_CONTRACTS"`
	QueryTimeout time.Duration `env:"HANDOFF_SERVE_QUERY_TIMEOUT" envDefault:"10s"`
	// WaitForDatabase starts serving only once the database has
	// handoff's tables, instead of refusing to start without them.
	WaitForDatabase bool `env:"HANDOFF_SERVE_WAIT_FOR_DATABASE"`
}

// register defines serve's flags on fs.
func (cfg *serveConfig) register(fs *flag.FlagSet, stderr io.Writer) {
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "HTTP listen address (env HANDOFF_SERVE_ADDR)")
	cfg.ClickHouse.RegisterFlags(fs)
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file or directory, for diagnoses on read (env HANDOFF_CONTRACTS); default: the default contract")
	fs.DurationVar(&cfg.QueryTimeout, "query-timeout", cfg.QueryTimeout, "time limit of every ClickHouse query (env HANDOFF_SERVE_QUERY_TIMEOUT)")
	fs.BoolVar(&cfg.WaitForDatabase, "wait-for-database", cfg.WaitForDatabase, "when the database has no handoff tables yet, wait for handoff ingest to create them instead of refusing to start (env HANDOFF_SERVE_WAIT_FOR_DATABASE)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff serve [flags]")
		fmt.Fprintln(stderr, "\nServe the JSON API (/api/v1) and the web pages over the delivery history in ClickHouse.")
		fmt.Fprintln(stderr, "Refuses to start (exit 2) when the database has no handoff tables, unless --wait-for-database.")
		fmt.Fprintln(stderr, "Every flag has a HANDOFF_* variable (named in its help); flags win.\n\nFlags:")
		fs.PrintDefaults()
	}
}

// runServe is `handoff serve`: the JSON API and the web pages over the
// delivery history, until ctx is done (docs/serve.md).
func runServe(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	var cfg serveConfig
	if err := env.Parse(&cfg); err != nil {
		return usageError("environment: %v", err)
	}
	fs := flag.NewFlagSet("handoff serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.register(fs, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if cfg.QueryTimeout <= 0 {
		return usageError("--query-timeout %v: want a positive duration such as 10s", cfg.QueryTimeout)
	}
	if err := cfg.ClickHouse.Check(); err != nil {
		return usageError("%v", err)
	}
	contracts, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	conn, err := cfg.ClickHouse.Open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	runner, err := dash.NewRunner(conn, cfg.ClickHouse.Database)
	if err != nil {
		return usageError("--clickhouse-database: %v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv, err := serve.New(ctx, conn, serve.Options{
		Database: cfg.ClickHouse.Database, Contracts: contracts, Dashboards: runner,
		QueryTimeout: cfg.QueryTimeout, Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	if err := serve.CheckDatabase(ctx, srv, cfg.WaitForDatabase, serve.WaitPoll, log); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while waiting
		}
		return err
	}
	defer gcDefaults(ctx, serveGCPercent, softMemoryLimit)()
	return serve.ListenAndServe(ctx, srv, cfg.Addr, func(a net.Addr) {
		log.Info("serving", "url", "http://"+a.String()+"/", "database", cfg.ClickHouse.Database, "readonly_user", srv.Readonly())
	})
}

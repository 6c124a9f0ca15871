package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/handoff-dev/handoff/query/dash"
	"github.com/handoff-dev/handoff/query/serve"
)

// serveConfig is serve's configuration: environment variables first, then
// flags, which win.
type serveConfig struct {
	Addr         string `env:"HANDOFF_SERVE_ADDR" envDefault:"127.0.0.1:8080"`
	ClickHouse   clickhouseConfig
	Contracts    string        `env:"HANDOFF_CONTRACTS"`
	QueryTimeout time.Duration `env:"HANDOFF_SERVE_QUERY_TIMEOUT" envDefault:"10s"`
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
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "HTTP listen address (env HANDOFF_SERVE_ADDR)")
	cfg.ClickHouse.register(fs)
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file or directory, for diagnoses on read (env HANDOFF_CONTRACTS); default: the default contract")
	fs.DurationVar(&cfg.QueryTimeout, "query-timeout", cfg.QueryTimeout, "time limit of every ClickHouse query (env HANDOFF_SERVE_QUERY_TIMEOUT)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: handoff serve [flags]")
		fmt.Fprintln(stderr, "\nServe the JSON API (/api/v1) and the web pages over the delivery history in ClickHouse.")
		fmt.Fprintln(stderr, "Every flag has a HANDOFF_* variable (named in its help); flags win.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if cfg.QueryTimeout <= 0 {
		return usageError("--query-timeout %v: want a positive duration such as 10s", cfg.QueryTimeout)
	}
	if err := cfg.ClickHouse.check(); err != nil {
		return err
	}
	contracts, err := loadContracts(cfg.Contracts)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	conn, err := cfg.ClickHouse.open(ctx)
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
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w (set HANDOFF_SERVE_ADDR or --addr to a free address)", cfg.Addr, err)
	}
	defer gcDefaults(serveGCPercent, softMemoryLimit)()
	hs := serve.HTTPServer(srv)
	log.Info("serving", "url", "http://"+ln.Addr().String()+"/", "database", cfg.ClickHouse.Database, "readonly_user", srv.Readonly())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: shut down: %w", err)
	}
	return nil
}

package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/handoff-dev/handoff/internal/exitcode"
)

// WaitPoll is how often WaitForDatabase asks again.
const WaitPoll = 2 * time.Second

// CheckDatabase checks, before the server listens, that the database it
// reads has handoff's tables. A database without them is the caller's
// mistake (exit 2) unless wait: then it asks again every poll until the
// tables appear (handoff ingest creates them) or ctx is done, logging what
// it waits for once.
func CheckDatabase(ctx context.Context, srv *Server, wait bool, poll time.Duration, log *slog.Logger) error {
	err := srv.Ping(ctx)
	if err == nil {
		return nil
	}
	if !wait {
		return exitcode.Usagef("--clickhouse-database %s: %w; start handoff ingest on it first (it creates the tables), or pass --wait-for-database to wait for them", srv.Database(), err)
	}
	if log != nil {
		log.Info("waiting for the database", "database", srv.Database(), "reason", err.Error(), "poll", poll)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for the database %s: %w (last: %v)", srv.Database(), ctx.Err(), err)
		case <-t.C:
		}
		if err = srv.Ping(ctx); err == nil {
			return nil
		}
	}
}

// ListenAndServe serves srv on addr until ctx is done, then shuts down,
// giving requests in flight up to 10 seconds. ready, when set, is called
// with the address listened on (port 0 picks a free one).
func ListenAndServe(ctx context.Context, srv *Server, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set HANDOFF_SERVE_ADDR or --addr to a free address)", addr, err)
	}
	hs := HTTPServer(srv)
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

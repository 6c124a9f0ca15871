// Package serve is `handoff serve`: a JSON API under /api/v1 and web pages
// over the delivery history in ClickHouse, from one http.Handler.
//
// Every read is a constant statement with ? placeholders bound by the
// driver; the database name is the one identifier in the SQL text, checked
// by schema.CheckDatabase. Parameters are checked before anything is read:
// a bad one is a 400 naming it. Every query runs under a timeout (a timer
// cancelling it and, unless the user is readonly=1, max_execution_time on
// the server). A batch with no stored diagnosis (diagnoses_v2) is diagnosed
// on read from its stored events as of the request, with the contracts.
// docs/serve.md is the reference.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/findings"
	"github.com/handoff-dev/handoff/store/chconn"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/schema"
)

// Options configure a Server beyond its connection.
type Options struct {
	// Database holds handoff's tables (default schema.DefaultDatabase).
	Database string
	// Contracts give each pipeline's delivery contract for diagnoses on
	// read; nil gives every pipeline the default contract.
	Contracts history.Contracts
	// Dashboards runs the named dashboard queries; nil serves none.
	Dashboards Dashboards
	// MaxScanEvents is how many events one list or grid request may read
	// (default DefaultMaxScanEvents); a filter matching more is refused
	// with how to narrow it.
	MaxScanEvents int
	// QueryTimeout bounds every ClickHouse query (default 10s).
	QueryTimeout time.Duration
	// Now is the clock of diagnoses on read and of finding ages (default
	// time.Now).
	Now func() time.Time
	// Registry receives the server's metrics and is served at /metrics
	// (default: a new registry).
	Registry *prometheus.Registry
	// Logger logs failed requests (default: discard).
	Logger *slog.Logger
	// FirstDatesTTL is how long each pipeline's first business date is
	// kept before it is read again (default DefaultFirstDatesTTL;
	// negative: read per request). docs/serve.md, "Caches", has the rule.
	FirstDatesTTL time.Duration
	// MaxIncidentBatches is how many downstream batches one incident page
	// reads at most (default DefaultMaxIncidentBatches); the page says
	// when it was hit.
	MaxIncidentBatches int
}

// DefaultFirstDatesTTL is Options.FirstDatesTTL's default.
const DefaultFirstDatesTTL = 30 * time.Second

// Server serves the API and the pages.
type Server struct {
	rd    *reader
	store *history.Store
	// context reads what a diagnosis needs besides the events: the
	// store, or the store with its first dates cached.
	context   history.ContextReader
	contracts history.Contracts
	dash      Dashboards
	now       func() time.Time
	log       *slog.Logger
	maxScan   int
	// shards is how many Sets an all-pipelines list folds and diagnoses
	// at once (fold.go): the machine's cores, at least two.
	shards int
	// graph is the contracts' upstreams, reversed: an incident's
	// downstream batches.
	graph       *upstream.Graph
	maxIncident int
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	mux         *http.ServeMux
	// baseline is the learner's options of the baselines a diagnosis on
	// read shows, the same as every command's (history.BaselineOptions).
	baseline learn.Options
}

// New returns a Server reading conn. It asks the server whether the user
// is readonly=1 (then no query carries settings) and fails when the
// database name is not a valid identifier.
func New(ctx context.Context, conn chconn.Conn, opts Options) (*Server, error) {
	db := opts.Database
	if db == "" {
		db = schema.DefaultDatabase
	}
	if err := schema.CheckDatabase(db); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	st, err := history.New(conn, db)
	if err != nil {
		return nil, err
	}
	timeout := opts.QueryTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	s := &Server{
		rd:        &reader{conn: conn, db: db, timeout: timeout},
		store:     st,
		contracts: opts.Contracts,
		dash:      opts.Dashboards,
		now:       opts.Now,
		log:       opts.Logger,
		maxScan:   opts.MaxScanEvents,
		shards:    min(max(runtime.GOMAXPROCS(0), 2), maxShards),
		reg:       opts.Registry,
	}
	if s.maxScan <= 0 {
		s.maxScan = DefaultMaxScanEvents
	}
	if s.maxIncident = opts.MaxIncidentBatches; s.maxIncident <= 0 {
		s.maxIncident = DefaultMaxIncidentBatches
	}
	if set, ok := s.contracts.(*contract.Set); s.contracts == nil || (ok && set == nil) {
		// The default contract for every pipeline, from an empty Set
		// rather than a nil one: a Set keeps the default it gives each
		// pipeline (contract.Set.For), a nil one makes it anew each call.
		empty, err := contract.NewSet()
		if err != nil {
			return nil, err
		}
		s.contracts = empty
	}
	s.graph = upstream.NewGraph(s.contracts)
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
	}
	if s.baseline, err = history.BaselineOptions(); err != nil {
		return nil, err
	}
	if err := s.rd.detectReadonly(ctx); err != nil {
		return nil, err
	}
	// No page shows an event's spec or attrs: the replay never reads
	// them, and leaving them out is a fifth less to read and decode.
	st.ReplayOnly = true
	// The all-pipelines pages read their dates from the copy sorted by
	// date (events_by_date) when the database has it: a date across every
	// pipeline is then one range of rows, not a scan of its month of
	// events. A database whose ingester has not made it yet is read from
	// events, as before, until serve starts again.
	byDate, err := st.HasByDate(ctx)
	if err != nil {
		return nil, err
	}
	st.ByDate = byDate
	s.context = st
	if ttl := opts.FirstDatesTTL; ttl >= 0 {
		if ttl == 0 {
			ttl = DefaultFirstDatesTTL
		}
		fd := history.NewFirstDateCache(st, ttl, timeout)
		fd.QueryContext = s.rd.ctx
		s.context = fd
	}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "handoff_serve_requests_total", Help: "HTTP requests served, by route and status code.",
	}, []string{"route", "code"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "handoff_serve_request_seconds", Help: "Time to serve a request, by route.",
		Buckets: []float64{.005, .01, .025, .05, .1, .2, .5, 1, 2.5, 5, 10},
	}, []string{"route"})
	if err := s.reg.Register(s.requests); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if err := s.reg.Register(s.latency); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	s.routes()
	return s, nil
}

// Ping checks that ClickHouse answers and the database has handoff's
// events table, as /healthz does.
func (s *Server) Ping(ctx context.Context) error { return s.rd.ping(ctx) }

// Database is the database the server reads.
func (s *Server) Database() string { return s.rd.db }

// Readonly reports whether the ClickHouse user runs with readonly=1.
func (s *Server) Readonly() bool { return s.rd.readonly }

// ServeHTTP serves the API, the pages, /healthz and /metrics, every
// response with the security headers (securityHeaders).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	s.mux.ServeHTTP(w, r)
}

// securityHeaders sets the headers every response carries. The pages are
// plain HTML and one stylesheet of this origin, with no script: the policy
// allows exactly that, so an injected script, style, frame or form target
// does nothing. nosniff keeps a browser from running a JSON body or the
// stylesheet as something else; frame-ancestors and X-Frame-Options keep
// the pages out of other sites' frames (clickjacking); no Referer carries
// a batch URL to other sites.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// maxBodyBytes bounds a request body: every route is a GET, so any body
// is unexpected and only a little is read.
const maxBodyBytes = 1 << 10

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.handle("GET /api/v1/batches", "api_batches", s.apiBatches)
	s.handle("GET /api/v1/batches/{pipeline}/{date}/{id}", "api_batch", s.apiBatch)
	s.handle("GET /api/v1/incidents/{pipeline}/{date}/{id}", "api_incident", s.apiIncident)
	s.handle("GET /api/v1/findings", "api_findings", s.apiFindings)
	s.handle("GET /api/v1/dashboards", "api_dashboards", s.apiDashboards)
	s.handle("GET /api/v1/dashboards/{name}", "api_dashboard", s.apiDashboard)
	s.handle("/api/", "api_unknown", func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodGet {
			return &httpError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", msg: r.Method + " " + r.URL.Path + ": the API is read-only; use GET"}
		}
		return &httpError{status: http.StatusNotFound, code: "not_found", msg: "no API endpoint " + r.URL.Path + "; see /api/v1/ in docs/serve.md"}
	})
	s.handle("GET /healthz", "healthz", s.healthz)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	s.pageRoutes()
}

// handle registers h under pattern with metrics, the body limit, and
// errors written as JSON (API) or as an error page.
func (s *Server) handle(pattern, route string, h func(http.ResponseWriter, *http.Request) error) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		r.Body = http.MaxBytesReader(rec, r.Body, maxBodyBytes)
		if err := h(rec, r); err != nil {
			s.fail(rec, r, err)
		}
		s.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		s.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// httpError is an error with its HTTP status and a stable code.
type httpError struct {
	status    int
	code, msg string
	param     string
}

func (e *httpError) Error() string { return e.msg }

// ErrorBody is the JSON of every API error.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a stable code, a message saying what
// to do, and the parameter at fault when there is one.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

// classify maps an error to its HTTP status and body.
func classify(err error) (int, ErrorDetail) {
	var (
		pe *paramError
		he *httpError
		te *timeoutError
	)
	switch {
	case errors.As(err, &pe):
		return http.StatusBadRequest, ErrorDetail{Code: "bad_param", Message: pe.Error(), Param: pe.param}
	case errors.As(err, &he):
		return he.status, ErrorDetail{Code: he.code, Message: he.msg, Param: he.param}
	case errors.As(err, &te):
		return http.StatusGatewayTimeout, ErrorDetail{Code: "timeout", Message: te.Error()}
	case dashParamError(err) != nil:
		e := dashParamError(err)
		return http.StatusBadRequest, ErrorDetail{Code: "bad_param", Message: e.Error(), Param: e.param}
	case isUnknownQuery(err):
		return http.StatusNotFound, ErrorDetail{Code: "unknown_dashboard", Message: err.Error() + "; GET /api/v1/dashboards lists them"}
	}
	return http.StatusBadGateway, ErrorDetail{Code: "clickhouse", Message: err.Error()}
}

// fail writes err: JSON under /api/ and for /healthz (a probe reads JSON,
// docs/serve.md), an error page elsewhere.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, d := classify(err)
	if status >= 500 {
		s.log.Error("request failed", "path", r.URL.Path, "err", err)
	}
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/healthz" {
		writeJSON(w, status, ErrorBody{Error: d})
		return
	}
	s.errorPage(w, status, d)
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
	return nil
}

// today is the current UTC date, the default end of ranges.
func (s *Server) today() model.Date {
	t := s.now().UTC()
	return model.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}
}

// BatchList is a page of batches.
type BatchList struct {
	// Total is how many batches match the filter, over all pages.
	Total    int     `json:"total"`
	Page     int     `json:"page"`
	Size     int     `json:"size"`
	Pages    int     `json:"pages"`
	From     string  `json:"from"`
	To       string  `json:"to"`
	Batches  []Batch `json:"batches"`
	NextPage string  `json:"next_page,omitempty"`
}

// batchFilterOf reads the list filters of a request.
func (s *Server) batchFilterOf(p params, days int) (batchFilter, error) {
	var f batchFilter
	var err error
	if f.pipeline, err = p.pipeline(); err != nil {
		return f, err
	}
	if f.dates, err = p.dates(s.today(), days); err != nil {
		return f, err
	}
	if f.status, err = p.oneOf("status", statusNames); err != nil {
		return f, err
	}
	if f.verdict, err = p.oneOf("verdict", verdictNames); err != nil {
		return f, err
	}
	return f, nil
}

// defaultListDays is the range of the batch list when no dates are given.
const defaultListDays = 7

func (s *Server) apiBatches(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r.URL.RawQuery, "pipeline", "from", "to", "status", "verdict", "page", "size")
	if err != nil {
		return err
	}
	f, err := s.batchFilterOf(p, defaultListDays)
	if err != nil {
		return err
	}
	page, size, err := p.page()
	if err != nil {
		return err
	}
	all, err := s.listBatches(r.Context(), f)
	if err != nil {
		return err
	}
	out := BatchList{Total: len(all), Page: page, Size: size, Pages: (len(all) + size - 1) / size,
		From: f.dates.from.String(), To: f.dates.to.String(), Batches: pageOf(all, page, size)}
	if page < out.Pages {
		q := p.v
		q.Set("page", strconv.Itoa(page+1))
		q.Set("from", out.From)
		q.Set("to", out.To)
		out.NextPage = "/api/v1/batches?" + q.Encode()
	}
	return writeJSON(w, http.StatusOK, out)
}

// batchKeyOf reads the batch key of a /batches/{pipeline}/{date}/{id} path.
func batchKeyOf(r *http.Request) (model.BatchKey, error) {
	k := model.BatchKey{Pipeline: r.PathValue("pipeline"), BatchID: r.PathValue("id")}
	if err := model.CheckName("pipeline", k.Pipeline); err != nil {
		return k, badParam("pipeline", "%v", err)
	}
	d, err := model.ParseDate(r.PathValue("date"))
	if err != nil {
		return k, badParam("business_date", "%q is not a date: want YYYY-MM-DD (%v)", clip(r.PathValue("date")), err)
	}
	k.BusinessDate = d
	if err := model.CheckName("batch_id", k.BatchID); err != nil {
		return k, badParam("batch_id", "%v", err)
	}
	return k, nil
}

// batchOf returns the batch a /batches/{pipeline}/{date}/{id} request
// names (API or page), which takes no query parameters; no stored events
// is a 404.
func (s *Server) batchOf(r *http.Request) (model.BatchKey, *BatchDetail, error) {
	if _, err := parseParams(r.URL.RawQuery); err != nil {
		return model.BatchKey{}, nil, err
	}
	k, err := batchKeyOf(r)
	if err != nil {
		return k, nil, err
	}
	b, err := s.batch(r.Context(), k)
	var nd *notDueError
	if errors.As(err, &nd) {
		return k, nil, &httpError{status: http.StatusNotFound, code: "not_due", msg: nd.Error()}
	}
	if errors.Is(err, errNoBatch) {
		return k, nil, &httpError{status: http.StatusNotFound, code: "not_found", msg: strings.TrimPrefix(err.Error(), errNoBatch.Error()+": ")}
	}
	return k, b, err
}

func (s *Server) apiBatch(w http.ResponseWriter, r *http.Request) error {
	_, b, err := s.batchOf(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, b)
}

// FindingList is a page of findings.
type FindingList struct {
	Total    int       `json:"total"`
	Page     int       `json:"page"`
	Size     int       `json:"size"`
	Findings []Finding `json:"findings"`
}

// findingFilterOf reads the findings filters of a request.
func findingFilterOf(p params) (findings.Filter, error) {
	var f findings.Filter
	pipeline, err := p.pipeline()
	if err != nil {
		return f, err
	}
	if pipeline != "" {
		f.Pipelines = []string{pipeline}
	}
	if f.State, err = p.oneOf("state", []string{findings.StateOpen, findings.StateResolved}); err != nil {
		return f, err
	}
	if kind := p.str("kind"); kind != "" {
		if err := model.CheckName("kind", kind); err != nil {
			return f, badParam("kind", "%v", err)
		}
		f.Kinds = []string{kind}
	}
	if p.str("from") != "" || p.str("to") != "" {
		if f.From, err = p.date("from", model.Date{}); err != nil {
			return f, err
		}
		if f.To, err = p.date("to", model.Date{}); err != nil {
			return f, err
		}
		if f.From.IsZero() || f.To.IsZero() {
			return f, badParam("from", "give both from and to, or neither")
		}
		if f.From.Compare(f.To) > 0 {
			return f, badParam("from", "%s is after to=%s", f.From, f.To)
		}
	}
	return f, nil
}

// maxFindings is how many findings one request reads at most.
const maxFindings = 10_000

// findingsOf reads the findings a request selects, with their ages.
func (s *Server) findingsOf(ctx context.Context, f findings.Filter) ([]Finding, error) {
	all, err := s.rd.findings(ctx, f, maxFindings)
	if err != nil {
		return nil, err
	}
	now := s.now()
	for i := range all {
		end := now
		if !all[i].ResolvedAt.IsZero() {
			end = all[i].ResolvedAt
		}
		all[i].AgeSeconds = int64(end.Sub(all[i].RaisedAt) / time.Second)
		all[i].AsOf = now
		all[i].Zone = s.zone(all[i].Batch.Pipeline)
	}
	return all, nil
}

func (s *Server) apiFindings(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r.URL.RawQuery, "pipeline", "state", "kind", "from", "to", "page", "size")
	if err != nil {
		return err
	}
	f, err := findingFilterOf(p)
	if err != nil {
		return err
	}
	page, size, err := p.page()
	if err != nil {
		return err
	}
	all, err := s.findingsOf(r.Context(), f)
	if err != nil {
		return err
	}
	out := FindingList{Total: len(all), Page: page, Size: size, Findings: pageOf(all, page, size)}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	if err := s.rd.ping(r.Context()); err != nil {
		return &httpError{status: http.StatusServiceUnavailable, code: "unavailable", msg: err.Error()}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "database": s.rd.db, "readonly": s.rd.readonly})
}

// pageOf returns page (from 1) of all in pages of size: empty, never nil,
// past the end.
func pageOf[T any](all []T, page, size int) []T {
	lo := (page - 1) * size
	if lo >= len(all) {
		return []T{}
	}
	return all[lo:min(lo+size, len(all))]
}

// pathEscape escapes one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }

// HTTPServer returns an http.Server for h with the request limits of
// handoff serve: bounded header size and read/write times, so a slow or
// oversized client cannot hold the server.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/ingest/files"
	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/model/manifest"
)

// remedyConfig is what restore-signal and verify share: which batch, where
// its files are, and where its events come from (as diagnose reads them).
type remedyConfig struct {
	Events    string `env:"HANDOFF_EVENTS"`
	Contracts string `env:"HANDOFF_CONTRACTS"`
	Database  string `env:"HANDOFF_CLICKHOUSE_DATABASE" envDefault:"handoff"`
	User      string `env:"HANDOFF_CLICKHOUSE_USER"`
	Password  string `env:"HANDOFF_CLICKHOUSE_PASSWORD"`
	// ClickHouse, like diagnose's, is a flag only.
	ClickHouse string
	Batch      string
	Dir        string
	AsOf       string
	Format     string
	Settle     time.Duration

	key  model.BatchKey
	asOf time.Time // zero: now, read at each evaluation
}

// remedyFlags declares the shared flags on fs; settle, when the command
// needs the data file to hold still (restore-signal).
func remedyFlags(fs *flag.FlagSet, cfg *remedyConfig, settle bool) {
	fs.StringVar(&cfg.Batch, "batch", "", "the batch, pipeline/business_date/batch_id (required)")
	fs.StringVar(&cfg.Dir, "dir", "", "the receiver directory holding the batch's data file and signal (required)")
	fs.StringVar(&cfg.Contracts, "contract", cfg.Contracts, "delivery contract file, or a directory of them (required; env HANDOFF_CONTRACTS)")
	fs.StringVar(&cfg.Events, "events", cfg.Events, "JSON-lines file of delivery events (env HANDOFF_EVENTS)")
	fs.StringVar(&cfg.ClickHouse, "clickhouse", "", "read events from ClickHouse at ADDR (host:port, native protocol) instead of a file")
	fs.StringVar(&cfg.Database, "database", cfg.Database, "ClickHouse database of handoff's tables (env HANDOFF_CLICKHOUSE_DATABASE)")
	fs.StringVar(&cfg.AsOf, "as-of", "", "evaluate as of this RFC 3339 time; default: now")
	fs.StringVar(&cfg.Format, "format", "text", "output format, text or json")
	if settle {
		fs.DurationVar(&cfg.Settle, "settle", 2*time.Second, "the data file must keep its size and modification time this long to count as final (0: do not wait)")
	}
}

// check validates the shared flags before anything is read.
func (cfg *remedyConfig) check() error {
	if cfg.Batch == "" {
		return usageError("--batch pipeline/business_date/batch_id is required")
	}
	k, err := model.ParseBatchKey(cfg.Batch)
	if err != nil {
		return usageError("--batch: %v", err)
	}
	cfg.key = k
	if cfg.Dir == "" {
		return usageError("--dir is required: the receiver directory of the batch's files")
	}
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return usageError("--dir %s: not a directory (%v)", cfg.Dir, err)
	}
	if cfg.Contracts == "" {
		return usageError("--contract is required: the names of the data file and the signal derive from the contract's templates")
	}
	if cfg.Format != "text" && cfg.Format != "json" {
		return usageError("--format %q: want text or json", cfg.Format)
	}
	if cfg.Events == "-" {
		return usageError("--events -: read events from a file (the source is read again by --wait and appended to by --apply)")
	}
	if cfg.Settle < 0 {
		return usageError("--settle %v: must not be negative", cfg.Settle)
	}
	if cfg.AsOf != "" {
		t, err := cliflag.ParseTime("as-of", cfg.AsOf)
		if err != nil {
			return usageError("%v", err)
		}
		cfg.asOf = t
	}
	return nil
}

// parseRemedyEnv reads the environment into a config.
func parseRemedyEnv() (remedyConfig, error) {
	var cfg remedyConfig
	if err := env.Parse(&cfg); err != nil {
		return cfg, usageError("environment: %v", err)
	}
	return cfg, nil
}

// replayBatch reads the source and replays the batch's pipeline: the
// batch's diagnosis and every batch of the pipeline read (for continuity
// and for "no other batch affected"). From ClickHouse it reads the week
// before and the week after the batch.
func replayBatch(ctx context.Context, cfg *remedyConfig, set *contract.Set, stderr io.Writer) (replay.Diagnosis, []replay.Diagnosis, error) {
	dc := diagnoseConfig{Events: cfg.Events, ClickHouse: cfg.ClickHouse, Database: cfg.Database, User: cfg.User, Password: cfg.Password}
	if cfg.ClickHouse != "" {
		dc.Pipeline = cfg.key.Pipeline
		dc.From, dc.To = cfg.key.BusinessDate.AddDays(-7).String(), cfg.key.BusinessDate.AddDays(7).String()
	}
	asOf := cfg.asOf
	if asOf.IsZero() {
		asOf = time.Now()
	}
	src, err := openSource(ctx, dc, nil, model.BatchKey{}, set, asOf)
	if err != nil {
		return replay.Diagnosis{}, nil, err
	}
	msgs := bufio.NewWriter(stderr)
	defer msgs.Flush()
	rep := &reporter{w: msgs, name: src.name(), sum: &summary{rejected: map[model.RejectKind]int{}}}
	bs := batches.New(batches.Contracts(set), asOf)
	sc := src.scope()
	if first, ok := sc.firstOf(cfg.key.Pipeline); ok {
		bs.Known(cfg.key.Pipeline, first)
	}
	err = src.feed(ctx, func(e *model.Event) error {
		if e.Pipeline == cfg.key.Pipeline {
			bs.Add(e)
		}
		return nil
	}, rep)
	rep.hiddenBad()
	if err != nil {
		return replay.Diagnosis{}, nil, err
	}
	all := bs.Diagnose(func(k model.BatchKey) bool { return k.BusinessDate.Compare(sc.from) >= 0 })
	for _, d := range all {
		if d.Batch == cfg.key.String() {
			return d, all, nil
		}
	}
	return replay.Diagnosis{}, nil, &exitError{code: exitNotDelivered, err: fmt.Errorf("no events recorded for batch %s in %s: nothing proves any boundary, so nothing can be restored or verified", cfg.key, src.name())}
}

// probeReceiver measures the batch's data file and signal in the receiver
// directory, under the names the contract derives.
func probeReceiver(ctx context.Context, cfg *remedyConfig, c *contract.Contract) (remedy.Facts, error) {
	f := remedy.Facts{Dir: cfg.Dir}
	artifact, _ := c.ArtifactName(cfg.key)
	signal, _ := c.SignalName(cfg.key)
	if artifact != "" {
		a, err := probeFile(ctx, cfg.Dir, artifact, files.Options{Format: files.FormatOf(artifact), Header: c.Rows.Header}, cfg.Settle, false)
		if err != nil {
			return f, err
		}
		f.Artifact = a
	}
	if signal != "" {
		s, err := probeFile(ctx, cfg.Dir, signal, files.Options{}, 0, true)
		if err != nil {
			return f, err
		}
		f.Signal = s
	}
	return f, nil
}

// probeFile probes dir/name, with its temporary copies, its stability over
// settle (when not zero) and, for a signal, its content.
func probeFile(ctx context.Context, dir, name string, opts files.Options, settle time.Duration, content bool) (remedy.File, error) {
	path := filepath.Join(dir, name)
	out := remedy.File{Name: name}
	temps, err := files.TempsOf(dir, name)
	if err != nil {
		return out, fmt.Errorf("list %s: %w", dir, err)
	}
	out.Temps = temps
	if settle > 0 {
		stable, _, _, err := files.Stable(ctx, path, settle)
		if err != nil && ctx.Err() != nil {
			return out, ctx.Err()
		}
		out.Stable, out.Settle = stable, settle
	}
	facts, err := files.Probe(ctx, path, opts)
	if err != nil {
		return out, err
	}
	out.Exists, out.Regular, out.Readable = facts.Exists, facts.Regular, facts.Readable
	out.Size, out.ModTime, out.Rows, out.Checksum, out.Err = facts.Size, facts.ModTime, facts.Rows, facts.Checksum, facts.Err
	if content && facts.Readable && facts.Size <= manifest.MaxSize {
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return out, fmt.Errorf("read signal %s: %w", path, err)
		}
		if b == nil {
			b = []byte{}
		}
		out.Content = b
	}
	return out, nil
}

// printResults prints preconditions or checks, one per line with its
// evidence.
func printResults(w io.Writer, title string, rs []remedy.Result, yes, no string) {
	fmt.Fprintln(w, title)
	width := 0
	for _, r := range rs {
		width = max(width, len(r.Name))
	}
	for _, r := range rs {
		mark := "[" + yes + "]"
		if !r.Proven {
			mark = "[" + no + "]"
		}
		fmt.Fprintf(w, "  %-12s %-*s  %s\n", mark, width, r.Name, r.Detail)
		if len(r.Evidence) > 0 {
			fmt.Fprintf(w, "  %-12s %-*s  evidence: %s\n", "", width, "", strings.Join(r.Evidence, ", "))
		}
	}
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

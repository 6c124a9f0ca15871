// Package suggest is the edge of `handoff contracts suggest`
// (docs/learned.md): it reads a range of stored history, from ClickHouse
// through store/history or from a file of JSON lines, feeds it to the pure
// learner (analyzer/learn), and writes the suggested contracts, or how
// they differ from the contracts in force.
package suggest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
)

// Config says what history to learn from.
type Config struct {
	// From and To bound the business dates read, inclusive; a zero Date
	// leaves that side open (ClickHouse needs both).
	From, To model.Date
	// Patterns select pipelines by name (path.Match globs such as
	// "finance.*"); empty: every pipeline.
	Patterns []string
	// Zones are the candidate time zones (nil: learn.DefaultZones).
	Zones []*time.Location
}

// CheckPatterns reports the first malformed pattern.
func CheckPatterns(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("--pipeline %q: %v (want a name or a glob such as \"finance.*\")", p, err)
		}
	}
	return nil
}

// selects reports whether cfg takes pipeline name.
func (cfg Config) selects(name string) bool {
	if len(cfg.Patterns) == 0 {
		return true
	}
	for _, p := range cfg.Patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// inRange reports whether d lies in [From, To].
func (cfg Config) inRange(d model.Date) bool {
	return (cfg.From.IsZero() || d.Compare(cfg.From) >= 0) && (cfg.To.IsZero() || d.Compare(cfg.To) <= 0)
}

// Source is where the history comes from.
type Source interface {
	// Feed hands every selected event to add.
	Feed(ctx context.Context, cfg Config, add func(*model.Event)) error
}

// File reads events from JSON lines; lines that are not valid events are
// counted and skipped, as diagnose skips them.
type File struct {
	Name string
	R    io.Reader
	// Rejected counts the lines skipped, after Feed.
	Rejected int
}

// Feed implements Source.
func (f *File) Feed(ctx context.Context, cfg Config, add func(*model.Event)) error {
	_, err := jsonl.Read(ctx, f.R, jsonl.Options{}, func(_ int, e *model.Event, err error) error {
		if err != nil {
			f.Rejected++
			return nil
		}
		if e.Type.HasBatch() && cfg.selects(e.Pipeline) && cfg.inRange(e.BusinessDate) {
			add(e)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read events from %s: %w", f.Name, err)
	}
	return nil
}

// Store reads events from ClickHouse, pipeline by pipeline.
type Store struct{ History *history.Store }

// Feed implements Source.
func (s Store) Feed(ctx context.Context, cfg Config, add func(*model.Event)) error {
	if cfg.From.IsZero() || cfg.To.IsZero() {
		return errors.New("reading ClickHouse needs a range: set --from and --to")
	}
	census, err := s.History.Census(ctx, history.CensusFilter{ReadFrom: cfg.From, From: cfg.From, To: cfg.To})
	if err != nil {
		return err
	}
	for _, p := range census {
		if !cfg.selects(p.Pipeline) {
			continue
		}
		err := s.History.EachEvent(ctx, history.Filter{Pipeline: p.Pipeline, From: cfg.From, To: cfg.To}, func(e model.Event) error {
			add(&e)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Learn reads src and returns the suggestions.
func Learn(ctx context.Context, src Source, cfg Config) ([]learn.Suggestion, error) {
	l := learn.New()
	if err := src.Feed(ctx, cfg, l.Add); err != nil {
		return nil, err
	}
	return l.Suggest(learn.Options{Zones: cfg.Zones}), nil
}

// Print writes the suggestions one after the other, each headed by the
// file name it would have.
func Print(w io.Writer, ss []learn.Suggestion) error {
	for i, s := range ss {
		sep := ""
		if i > 0 {
			sep = "\n"
		}
		if _, err := fmt.Fprintf(w, "%s# ==> %s.yaml <==\n%s", sep, s.Pipeline, s.YAML); err != nil {
			return err
		}
	}
	return nil
}

// WriteDir writes each suggestion to DIR/<pipeline>.yaml and says so on w.
// It refuses to overwrite a file: a suggestion is read and merged by hand.
func WriteDir(w io.Writer, dir string, ss []learn.Suggestion) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("suggested contracts directory: %w", err)
	}
	for _, s := range ss {
		name := filepath.Join(dir, s.Pipeline+".yaml")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("write the suggestion for %s: %w (suggestions never overwrite a file: choose an empty --out directory)", s.Pipeline, err)
		}
		_, err = f.Write(s.YAML)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		fmt.Fprintf(w, "%s: %d batches, %d lines not learned\n", name, s.Batches, len(s.Notes))
	}
	return nil
}

// Diff writes, pipeline by pipeline, how each suggestion differs from the
// contract of fsys (a directory of contracts, as diagnose loads them), and
// returns how many pipelines differ.
func Diff(w io.Writer, fsys fs.FS, ss []learn.Suggestion) (int, error) {
	set, err := contract.LoadFS(fsys, ".")
	if err != nil {
		return 0, err
	}
	differ := 0
	for _, s := range ss {
		c := set.For(s.Pipeline)
		if c.IsDefault() {
			differ++
			fmt.Fprintf(w, "%s: no contract; suggested:\n%s\n", s.Pipeline, indent(s.YAML))
			continue
		}
		lines, err := learn.Diff(c, s)
		if err != nil {
			return differ, err
		}
		if len(lines) == 0 {
			fmt.Fprintf(w, "%s (%s): as suggested\n", s.Pipeline, c.Source)
			continue
		}
		differ++
		fmt.Fprintf(w, "%s (%s):\n", s.Pipeline, c.Source)
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	return differ, nil
}

func indent(b []byte) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(string(b), "\n"), "\n", "\n  ")
}

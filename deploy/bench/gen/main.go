// Command gen writes a deterministic JSON-lines file of delivery events for
// benchmarking `handoff diagnose` (and for the detector's benchmarks):
// batches of many pipelines, 10 to 15 events each, with a realistic mix of
// outcomes, process heartbeats, and a few bad lines. The generator itself
// is internal/gen; this is its command line.
//
//	go run ./deploy/bench/gen -events 1000000 -seed 1 -out .data/bench/events.jsonl -contracts .data/bench/contracts
//
// The same flags always give the same bytes. The last business date is
// -end; diagnose it as of two days later (for -end 2026-09-30:
// --as-of 2026-10-03T00:00:00Z) so that the last two days read in_progress
// or late and the rest have settled.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/internal/gen"
)

func main() {
	var (
		events    = flag.Int("events", 1_000_000, "number of lines to write (0 with -days: no limit)")
		seed      = flag.Uint64("seed", 1, "random seed")
		out       = flag.String("out", "-", "output file, - for stdout")
		pipelines = flag.Int("pipelines", 0, "number of pipelines (0: about a year of daily batches)")
		end       = flag.String("end", "2026-09-30", "last business date")
		badRate   = flag.Float64("bad", 0.001, "fraction of lines that are invalid")
		contracts = flag.String("contracts", "", "if set, write a contract per pipeline into this directory")
		schedules = flag.String("schedules", "", "comma-separated schedules given to the pipelines in turn: daily, weekdays, hourly (default: all daily)")
		days      = flag.Int("days", 0, "number of business dates ending at -end (0: derived from -events)")
		never     = flag.Float64("never-produced", 0, "fraction of expected batches that send no event at all")
		allKinds  = flag.Bool("all-kinds", false, "also generate identity and checksum mismatches, orphan consumptions, SUCCESS without artifact, late transfers and restored signals")
	)
	flag.Parse()
	last, err := time.Parse("2006-01-02", *end)
	if err != nil {
		fatal(fmt.Errorf("-end: %w", err))
	}
	o := gen.Options{Events: *events, Seed: *seed, Pipelines: *pipelines, End: last, Bad: *badRate,
		Days: *days, NeverProduced: *never, AllKinds: *allKinds}
	if *events <= 0 && *days <= 0 {
		fatal(fmt.Errorf("-events %d: want a positive number of lines, or -days", *events))
	}
	if *schedules != "" {
		for _, s := range strings.Split(*schedules, ",") {
			switch sc := gen.Schedule(strings.TrimSpace(s)); sc {
			case gen.Daily, gen.Weekdays, gen.Hourly:
				o.Schedules = append(o.Schedules, sc)
			default:
				fatal(fmt.Errorf("-schedules: %q: want daily, weekdays or hourly", s))
			}
		}
	}
	w := os.Stdout
	if *out != "-" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			fatal(err)
		}
		f, err := os.Create(*out)
		if err != nil {
			fatal(err)
		}
		w = f
	}
	res, err := gen.Write(w, o)
	if err != nil {
		fatal(err)
	}
	if *out != "-" {
		if err := w.Close(); err != nil {
			fatal(err)
		}
	}
	if *contracts != "" {
		if err := gen.WriteContracts(*contracts, o, res.Pipelines); err != nil {
			fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "gen: %d lines, %d batches, %d pipelines, business dates %s..%s\n",
		res.Lines, res.Batches, res.Pipelines, res.First.Format("2006-01-02"), res.Last.Format("2006-01-02"))
	if len(res.NeverProduced) > 0 {
		fmt.Fprintf(os.Stderr, "gen: %d expected batches never produced an event\n", len(res.NeverProduced))
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

package backfill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
)

// memReader is a Reader over events in memory, in the store's order.
type memReader struct {
	events []model.Event // sorted by pipeline, business date, batch id, event id
	reads  atomic.Int64  // workers read concurrently
	// passReads counts the EachBatchEventPasses calls (each also counts
	// in reads once a pass).
	passReads atomic.Int64
}

func (m *memReader) Census(_ context.Context, f history.CensusFilter) ([]history.PipelineRows, error) {
	var out []history.PipelineRows
	for _, e := range m.events {
		if len(out) == 0 || out[len(out)-1].Pipeline != e.Pipeline {
			out = append(out, history.PipelineRows{Pipeline: e.Pipeline, First: e.BusinessDate})
		}
		p := &out[len(out)-1]
		if e.BusinessDate.Compare(f.ReadFrom) >= 0 && e.BusinessDate.Compare(f.To) <= 0 {
			p.Rows++
		}
		if e.BusinessDate.Compare(f.From) >= 0 && e.BusinessDate.Compare(f.To) <= 0 {
			p.InRange++
		}
	}
	return out, nil
}

func (m *memReader) LatestHeartbeats(context.Context, []string, time.Time) ([]model.Event, error) {
	return nil, nil
}

func (m *memReader) EachBatchEvent(ctx context.Context, pipelines []string, from, to model.Date, fn func(model.Event) error) error {
	m.reads.Add(1)
	for _, e := range m.events {
		if !slices.Contains(pipelines, e.Pipeline) || e.BusinessDate.Compare(from) < 0 || e.BusinessDate.Compare(to) > 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// EachBatchEventPasses walks the passes one after the other, as the
// store does when their ranges join up.
func (m *memReader) EachBatchEventPasses(ctx context.Context, pipelines []string, passes ...history.Pass) error {
	m.passReads.Add(1)
	for _, p := range passes {
		if err := m.EachBatchEvent(ctx, pipelines, p.From, p.To, func(e model.Event) error { return p.Fn(&e) }); err != nil {
			return err
		}
	}
	return nil
}

func (m *memReader) EachEvent(ctx context.Context, f history.Filter, fn func(model.Event) error) error {
	return m.EachBatchEvent(ctx, []string{f.Pipeline}, f.From, f.To, fn)
}

// genHistory returns one job.started event per batch: pipelines p00..,
// days business dates from 2026-09-01, 2026-09-01 = day 0.
func genHistory(pipelines, days int) []model.Event {
	var out []model.Event
	for p := range pipelines {
		for d := range days {
			date := model.MustParseDate("2026-09-01").AddDays(d)
			out = append(out, model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("e-%02d-%02d", p, d), Type: model.JobStarted,
				Time: date.In(time.UTC), Pipeline: fmt.Sprintf("p%02d", p), BusinessDate: date, BatchID: date.Compact(), System: model.Producer})
		}
	}
	return out
}

type noContracts struct{}

func (noContracts) For(p string) *contract.Contract { return contract.Default(p) }
func (noContracts) Pipelines() []string             { return nil }

// TestRunHandsOverInKeyOrder: with small units and several workers, the
// diagnoses of the range come in batch key order, each once, and none of
// the dates before From; with the units read ahead or not.
func TestRunHandsOverInKeyOrder(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-ahead=%v", ahead), func(t *testing.T) {
			r := &memReader{events: genHistory(17, 20)}
			cfg := Config{From: model.MustParseDate("2026-09-05"), To: model.MustParseDate("2026-09-20"), AsOf: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
				Contracts: noContracts{}, Workers: 3, UnitRows: 25, ReadAhead: ahead}
			var keys []string
			sum, err := Run(context.Background(), r, cfg, Hooks{Chunk: func(c *Chunk) error {
				keys = append(keys, c.Keys...)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if want := 17 * 16; len(keys) != want || sum.Batches != want {
				t.Fatalf("%d diagnoses handed over, summary %d, want %d", len(keys), sum.Batches, want)
			}
			for i := 1; i < len(keys); i++ {
				if keys[i-1] >= keys[i] {
					t.Fatalf("diagnosis %d (%s) after %s: not in strict key order", i, keys[i], keys[i-1])
				}
			}
			if keys[0] != "p00/2026-09-05/20260905" || keys[len(keys)-1] != "p16/2026-09-20/20260920" {
				t.Fatalf("first %s, last %s", keys[0], keys[len(keys)-1])
			}
			if n := r.reads.Load(); n < 17 {
				t.Fatalf("%d reads: units of 25 rows should read each 20-day pipeline alone", n)
			}
		})
	}
}

// TestRunStopsOnError: an error of the caller's hook ends Run with that
// error, without waiting for the other units (their workers are cancelled).
func TestRunStopsOnError(t *testing.T) {
	r := &memReader{events: genHistory(40, 30)}
	cfg := Config{From: model.MustParseDate("2026-09-01"), To: model.MustParseDate("2026-09-30"), AsOf: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		Contracts: noContracts{}, Workers: 4, UnitRows: 60}
	stop := errors.New("disk full")
	n := 0
	_, err := Run(context.Background(), r, cfg, Hooks{Chunk: func(c *Chunk) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) {
		t.Fatalf("Run: %v, want %v", err, stop)
	}
}

func TestCut(t *testing.T) {
	rows := func(ns ...uint64) []history.PipelineRows {
		var out []history.PipelineRows
		for i, n := range ns {
			out = append(out, history.PipelineRows{Pipeline: fmt.Sprint(i), Rows: n})
		}
		return out
	}
	tests := []struct {
		name string
		in   []history.PipelineRows
		want string // units: pipelines joined by ",", big ones marked *
	}{
		{"packed", rows(30, 30, 30, 30), "0,1,2 3"},
		{"big alone", rows(30, 150, 30), "0 1* 2"},
		{"exactly the limit", rows(100, 1), "0 1"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, u := range cut(tt.in, 100) {
				var names []string
				for _, p := range u.pipelines {
					names = append(names, p.Pipeline)
				}
				s := strings.Join(names, ",")
				if u.big {
					s += "*"
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("units %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}

// TestRunRecycledChunks: with Hooks.Recycle the chunks' buffers are used
// again, and what is handed over is the same, byte for byte: each chunk a
// piece of the JSON array (Sep before each diagnosis), each diagnosis one
// JSON object.
func TestRunRecycledChunks(t *testing.T) {
	r := &memReader{events: genHistory(17, 20)}
	cfg := Config{From: model.MustParseDate("2026-09-05"), To: model.MustParseDate("2026-09-20"), AsOf: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		Contracts: noContracts{}, Workers: 3, UnitRows: 25}
	run := func(recycle bool) (out []byte, keys []string) {
		_, err := Run(context.Background(), r, cfg, Hooks{Recycle: recycle, Chunk: func(c *Chunk) error {
			if !bytes.HasPrefix(c.JSON, []byte(Sep)) {
				t.Fatalf("a chunk starts with %q, want the separator %q", c.JSON[:min(8, len(c.JSON))], Sep)
			}
			for i := range c.Len() {
				if d := c.Diagnosis(i); !json.Valid(d) || d[0] != '{' {
					t.Fatalf("diagnosis %d of a chunk is not one JSON object: %.40q", i, d)
				}
			}
			out = append(out, c.JSON...)
			keys = append(keys, c.Keys...)
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		return out, keys
	}
	fresh, freshKeys := run(false)
	again, againKeys := run(true)
	if !bytes.Equal(fresh, again) || !slices.Equal(freshKeys, againKeys) {
		t.Fatalf("recycled chunks handed over %d bytes, %d keys; fresh ones %d bytes, %d keys", len(again), len(againKeys), len(fresh), len(freshKeys))
	}
	if len(freshKeys) != 17*16 {
		t.Fatalf("%d diagnoses, want %d", len(freshKeys), 17*16)
	}
}

// countingWriter is a model.TextWriter that counts the writes it was told
// are plain.
type countingWriter struct {
	*model.TextWriter
	plain, other int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.other++; return w.TextWriter.Write(p) }
func (w *countingWriter) WritePlain(p []byte) (int, error) {
	w.plain++
	return w.TextWriter.WritePlain(p)
}

// TestJSONArrayEscapesWhatIsNotPlain: chunks whose diagnoses hold
// terminal escapes, bidi overrides, DEL or other non-ASCII text go
// through the output's escaping, the others are written as they are;
// the output is the one escaping every byte gives.
func TestJSONArrayEscapesWhatIsNotPlain(t *testing.T) {
	events := genHistory(6, 20)
	hostile := []string{"\x1b]52;c;aGk=\x07", "\u202eevil", "del\x7f", "Zürich", "\u009b2J", "\xff"}
	for i := range events {
		if p := events[i].Pipeline; p == "p01" || p == "p04" {
			events[i].Component = hostile[i%len(hostile)]
		}
	}
	r := &memReader{events: events}
	cfg := Config{From: model.MustParseDate("2026-09-01"), To: model.MustParseDate("2026-09-20"), AsOf: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		Contracts: noContracts{}, Workers: 2, UnitRows: 25}
	var raw, got bytes.Buffer
	cw := &countingWriter{TextWriter: model.NewTextWriter(&got)}
	out := &jsonArray{w: cw, on: true}
	rawOut := &jsonArray{w: &raw, on: true}
	plain, not := 0, 0
	_, err := Run(context.Background(), r, cfg, Hooks{Chunk: func(c *Chunk) error {
		if c.Plain {
			plain++
		} else {
			not++
		}
		if err := rawOut.chunk(c); err != nil {
			return err
		}
		return out.chunk(c)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(out.close(), rawOut.close(), cw.Flush()); err != nil {
		t.Fatal(err)
	}
	if plain == 0 || not == 0 {
		t.Fatalf("%d plain chunks, %d not: the test needs both", plain, not)
	}
	if cw.plain != plain {
		t.Fatalf("%d writes told plain, for %d plain chunks", cw.plain, plain)
	}
	want := model.EscapeText(raw.String())
	if got.String() != want {
		t.Fatalf("the output differs from the escaped JSON\nwant %.300q\n got %.300q", want, got.String())
	}
	for _, h := range hostile[:3] {
		if strings.Contains(got.String(), h) {
			t.Fatalf("%q reached the output unescaped", h)
		}
	}
}

// failingReader fails the reads of one pipeline.
type failingReader struct {
	*memReader
	pipeline string
	err      error
}

func (f *failingReader) EachBatchEvent(ctx context.Context, pipelines []string, from, to model.Date, fn func(model.Event) error) error {
	if slices.Contains(pipelines, f.pipeline) {
		return f.err
	}
	return f.memReader.EachBatchEvent(ctx, pipelines, from, to, fn)
}

func (f *failingReader) EachBatchEventPasses(ctx context.Context, pipelines []string, passes ...history.Pass) error {
	if slices.Contains(pipelines, f.pipeline) {
		return f.err
	}
	return f.memReader.EachBatchEventPasses(ctx, pipelines, passes...)
}

// TestRunReadAheadError: with ReadAhead, a unit that fails to read, read
// ahead of its fold (any unit after a worker's first), ends Run with the
// read's error, after the diagnoses of the units before it, in key order.
func TestRunReadAheadError(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			fail := errors.New("connection reset")
			r := &failingReader{memReader: &memReader{events: genHistory(12, 10)}, pipeline: "p07", err: fail}
			cfg := Config{From: model.MustParseDate("2026-09-01"), To: model.MustParseDate("2026-09-10"), AsOf: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
				Contracts: noContracts{}, Workers: workers, UnitRows: 10, ReadAhead: true}
			var keys []string
			_, err := Run(context.Background(), r, cfg, Hooks{Chunk: func(c *Chunk) error {
				keys = append(keys, c.Keys...)
				return nil
			}})
			if !errors.Is(err, fail) {
				t.Fatalf("Run: %v, want %v", err, fail)
			}
			if want := 7 * 10; len(keys) != want {
				t.Fatalf("%d diagnoses handed over before the failed unit, want %d (p00 to p06)", len(keys), want)
			}
			for i := 1; i < len(keys); i++ {
				if keys[i-1] >= keys[i] {
					t.Fatalf("diagnosis %d (%s) after %s: not in strict key order", i, keys[i], keys[i-1])
				}
			}
		})
	}
}

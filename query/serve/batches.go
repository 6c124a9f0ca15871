package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/store"
)

// Batch is one batch of a list: its identity, its status and where it
// stopped, and whether that comes from a stored diagnosis or was
// diagnosed on read.
type Batch struct {
	Batch        string    `json:"batch"`
	Pipeline     string    `json:"pipeline"`
	BusinessDate string    `json:"business_date"`
	BatchID      string    `json:"batch_id"`
	Status       string    `json:"status"`
	Verdict      string    `json:"verdict"`
	FirstMissing string    `json:"first_missing"`
	AsOf         time.Time `json:"as_of"`
	// Source is "stored" (the latest row of diagnoses_v2) or "on_read"
	// (replayed from the stored events as of the request).
	Source       string    `json:"source"`
	Events       uint64    `json:"events"`
	FirstEventAt time.Time `json:"first_event_at"`
	LastEventAt  time.Time `json:"last_event_at"`
	// URL is the batch's web page.
	URL string `json:"url"`
}

// batchFilter selects batches; zero fields select all.
type batchFilter struct {
	pipeline        string
	dates           dateRange
	status, verdict string
}

// listBatches returns every batch f selects, in key order (pipeline,
// business date, batch id), each with its stored diagnosis or one made on
// read, filtered by status and verdict. More than MaxScanBatches batches
// in the range is a paramError: the filter must be narrowed.
func (s *Server) listBatches(ctx context.Context, f batchFilter) ([]Batch, error) {
	rows, err := s.rd.batchRows(ctx, f.pipeline, f.dates, MaxScanBatches+1)
	if err != nil {
		return nil, err
	}
	if len(rows) > MaxScanBatches {
		return nil, badParam("from", "more than %d batches between %s and %s: narrow the range or give a pipeline", MaxScanBatches, f.dates.from, f.dates.to)
	}
	onRead, err := s.diagnoseMissing(ctx, f, rows)
	if err != nil {
		return nil, err
	}
	out := make([]Batch, 0, len(rows))
	for _, r := range rows {
		b := Batch{
			Batch: r.key.String(), Pipeline: r.key.Pipeline, BusinessDate: r.key.BusinessDate.String(), BatchID: r.key.BatchID,
			Events: r.events, FirstEventAt: time.UnixMilli(r.first).UTC(), LastEventAt: time.UnixMilli(r.last).UTC(),
			URL: batchPath(r.key),
		}
		if r.stored {
			b.Status, b.Verdict, b.FirstMissing, b.AsOf, b.Source = r.status, r.verdict, r.firstMissing, time.UnixMilli(r.asOfMs).UTC(), "stored"
		} else if d, ok := onRead[r.key]; ok {
			b.Status, b.Verdict, b.FirstMissing, b.AsOf, b.Source = string(d.Status), d.Verdict.String(), d.FirstMissing, d.AsOf, "on_read"
		}
		if (f.status != "" && b.Status != f.status) || (f.verdict != "" && b.Verdict != f.verdict) {
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// diagnoseMissing replays, as of now, the batches of rows that have no
// stored diagnosis, from their stored events. Status and verdict depend
// only on a batch's own events (continuity and heartbeats add anomalies
// that do not break a batch and context for the next step), so the list
// reads only the range itself; the batch page reads the neighbours too.
func (s *Server) diagnoseMissing(ctx context.Context, f batchFilter, rows []batchRow) (map[model.BatchKey]replay.Diagnosis, error) {
	var keys []model.BatchKey
	for _, r := range rows {
		if !r.stored {
			keys = append(keys, r.key)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	set := batches.New(s.contracts, s.now())
	if err := s.readEvents(ctx, store.Filter{Pipeline: f.pipeline, From: f.dates.from, To: f.dates.to}, set); err != nil {
		return nil, err
	}
	out := make(map[model.BatchKey]replay.Diagnosis, len(keys))
	for _, d := range set.DiagnoseKeys(keys) {
		k, err := model.ParseBatchKey(d.Batch)
		if err != nil {
			return nil, fmt.Errorf("diagnosis on read of %s: %w", d.Batch, err)
		}
		out[k] = d
	}
	return out, nil
}

// readEvents folds the events f selects into set, under the query timeout.
func (s *Server) readEvents(ctx context.Context, f store.Filter, set *batches.Set) error {
	qctx, cancel := s.rd.ctx(ctx)
	defer cancel()
	err := s.store.EachEvent(qctx, f, func(e model.Event) error {
		set.Add(&e)
		return nil
	})
	if err != nil {
		return s.rd.wrap(ctx, qctx, "events", err)
	}
	return nil
}

// BatchDetail is one batch: its diagnosis (timeline, boundaries,
// hypotheses, anomalies, safe next step), the narrative per side, and
// where the diagnosis comes from.
type BatchDetail struct {
	Source    string            `json:"source"`
	Diagnosis *replay.Diagnosis `json:"diagnosis"`
	Sides     []replay.Side     `json:"sides"`
}

// errNoBatch is a batch with no stored events.
var errNoBatch = errors.New("no such batch")

// batch returns batch k: its latest stored diagnosis, or a diagnosis on
// read from its events and the week before it (the previous batch of any
// daily or weekday schedule, for continuity) as of now.
func (s *Server) batch(ctx context.Context, k model.BatchKey) (*BatchDetail, error) {
	stored, err := s.rd.storedDiagnosis(ctx, k)
	if err != nil {
		return nil, err
	}
	if stored != nil {
		var d replay.Diagnosis
		if err := json.Unmarshal(stored, &d); err != nil {
			return nil, fmt.Errorf("the stored diagnosis of %s in %s.diagnoses_v2 does not decode: %w", k, s.rd.db, err)
		}
		return &BatchDetail{Source: "stored", Diagnosis: &d, Sides: replay.Narrate(&d)}, nil
	}
	set := batches.New(s.contracts, s.now())
	f := store.Filter{Pipeline: k.Pipeline, From: k.BusinessDate.AddDays(-7), To: k.BusinessDate, Heartbeats: true}
	if err := s.readEvents(ctx, f, set); err != nil {
		return nil, err
	}
	d, ok := set.DiagnoseOne(k)
	if !ok {
		return nil, errNoBatch
	}
	return &BatchDetail{Source: "on_read", Diagnosis: &d, Sides: replay.Narrate(&d)}, nil
}

// batchPath is the web page of batch k; the alerting links to it.
func batchPath(k model.BatchKey) string {
	return "/batches/" + pathEscape(k.Pipeline) + "/" + k.BusinessDate.String() + "/" + pathEscape(k.BatchID)
}

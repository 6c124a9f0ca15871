package history

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// scheduledOf is the Scheduled list ReadContext asks the census for: the
// pipelines named, or every contract's.
func scheduledOf(named []string) []string {
	if named == nil {
		return []string{"d"}
	}
	return named
}

// ctxReader records what ReadContext asks of the store.
type ctxReader struct {
	census     []PipelineRows
	gotCensus  CensusFilter
	heartbeats []string // the pipelines asked for (nil: all)
}

func (r *ctxReader) Census(_ context.Context, f CensusFilter) ([]PipelineRows, error) {
	r.gotCensus = f
	return r.census, nil
}

func (r *ctxReader) LatestHeartbeats(_ context.Context, ps []string, _ time.Time) ([]model.Event, error) {
	r.heartbeats = ps
	// One heartbeat of the census's pipeline, one of another.
	return []model.Event{{ID: "hb", Pipeline: "d"}, {ID: "hb-other", Pipeline: "other"}}, nil
}

// dailyFor gives the named pipelines a daily schedule, the others none.
type dailyFor []string

func (d dailyFor) For(p string) *contract.Contract {
	c := contract.Default(p)
	if slices.Contains(d, p) {
		c.Schedule = contract.Daily
		c.BatchID = contract.MustTemplate("{yyyymmdd}")
	}
	return c
}
func (d dailyFor) Pipelines() []string { return d }

// TestReadContext: the read starts at the previous batch of the range's
// first batch for scheduled pipelines (never before the first storable
// date), the census is asked with it, and the heartbeats (asked for the
// pipelines named, at the same time) are kept only for the pipelines the
// census found.
func TestReadContext(t *testing.T) {
	found := []PipelineRows{{Pipeline: "d", First: model.MustParseDate("2026-01-01"), Rows: 5, InRange: 3}}
	tests := []struct {
		name      string
		pipelines []string
		from      string
		census    []PipelineRows
		readFrom  string
		kept      int
	}{
		{"scheduled", []string{"d"}, "2026-09-10", found, "2026-09-09", 1},
		{"every contract's pipeline", nil, "2026-09-10", found, "2026-09-09", 1},
		{"no schedule", []string{"x"}, "2026-09-10", found, "2026-09-10", 1},
		{"first storable date", []string{"d"}, "1970-01-02", found, "1970-01-02", 1},
		{"nothing in range", []string{"d"}, "2026-09-10", nil, "2026-09-09", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &ctxReader{census: tt.census}
			from, to := model.MustParseDate(tt.from), model.MustParseDate("2026-09-30")
			cx, err := ReadContext(context.Background(), r, ContextRequest{Pipelines: tt.pipelines, From: from, To: to, AsOf: time.Now(), Contracts: dailyFor{"d"}})
			if err != nil {
				t.Fatal(err)
			}
			want := CensusFilter{Pipelines: tt.pipelines, Scheduled: scheduledOf(tt.pipelines), ReadFrom: model.MustParseDate(tt.readFrom), From: from, To: to}
			if cx.ReadFrom.String() != tt.readFrom || fmt.Sprint(r.gotCensus) != fmt.Sprint(want) {
				t.Errorf("read from %s, census %+v; want %s, %+v", cx.ReadFrom, r.gotCensus, tt.readFrom, want)
			}
			if fmt.Sprint(r.heartbeats) != fmt.Sprint(tt.pipelines) || len(cx.Heartbeats) != tt.kept || (tt.kept == 1 && cx.Heartbeats[0].ID != "hb") {
				t.Errorf("heartbeats asked for %v, kept %v; want asked for %v, %d kept (the census's pipeline's)", r.heartbeats, cx.Heartbeats, tt.pipelines, tt.kept)
			}
		})
	}
}

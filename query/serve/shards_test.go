package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"testing/fstest"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/serve"
	"github.com/handoff-dev/handoff/store/storetest"
)

// TestShardedListsSameAnswer: the all-pipelines pages, whose batches are
// folded and diagnosed in shards by pipeline, are byte for byte the pages
// of one Set of every pipeline (one shard), on a generated estate with
// what a shard could get wrong: scheduled pipelines with expected batches
// that never came, re-runs of a date, every event stored twice (copies
// merges have not collapsed), batches stopped at every step, heartbeats,
// and pipelines on the default contract.
func TestShardedListsSameAnswer(t *testing.T) {
	tdb := storetest.NewDB(t, "serve_shards")
	raw, db := tdb.Conn, tdb.Name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	files := fstest.MapFS{}
	for i := range 12 {
		files[fmt.Sprintf("contracts/gen.s%02d.daily.yaml", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf(`pipeline: gen.s%02d.daily
schedule: daily
timezone: UTC
batch_id: "{yyyymmdd}"
required: [produced, finalized, signaled, consumed]
deadlines:
  produced: "business_date + 1d 02:00"
  finalized: "+30m"
  signaled: "+15m"
  consumed: "business_date + 1d 06:00"
`, i))}
	}
	contracts, err := contract.LoadFS(files, "contracts")
	if err != nil {
		t.Fatal(err)
	}
	first, last := model.MustParseDate("2026-09-20"), model.MustParseDate("2026-10-02")
	var events []model.Event
	steps := []struct {
		typ model.EventType
		sys model.System
	}{
		{model.JobStarted, model.Producer}, {model.ArtifactFinalized, model.Producer}, {model.JobSucceeded, model.Producer},
		{model.SignalPublished, model.Producer}, {model.ConsumeStarted, model.Consumer}, {model.ConsumeSucceeded, model.Consumer},
	}
	batch := func(p string, d model.Date, id string, n int, failed bool) {
		at := d.In(time.UTC).Add(25 * time.Hour)
		for i := range n {
			e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s-%d", p, id, i), Type: steps[i].typ, Time: at.Add(time.Duration(i) * time.Minute),
				Pipeline: p, BusinessDate: d, BatchID: id, System: steps[i].sys, Component: string(steps[i].sys) + "-1"}
			if steps[i].typ == model.ArtifactFinalized || steps[i].typ == model.ConsumeSucceeded {
				e.Object, e.Rows, e.HasRows = p+"_"+id+".csv", 100, true
			}
			events = append(events, e)
		}
		if failed {
			events = append(events, model.Event{Spec: model.SpecV1, ID: p + "-" + id + "-f", Type: model.ConsumeFailed, Time: at.Add(time.Hour),
				Pipeline: p, BusinessDate: d, BatchID: id, System: model.Consumer, Error: "consumer failed"})
		}
	}
	names := []string{}
	for i := range 12 {
		names = append(names, fmt.Sprintf("gen.s%02d.daily", i))
	}
	for i := range 30 {
		names = append(names, fmt.Sprintf("gen.d%02d.adhoc", i))
	}
	for pi, p := range names {
		for d, j := first, 0; d.Compare(last) <= 0; d, j = d.AddDays(1), j+1 {
			seed := pi*31 + j*7
			if seed%5 == 0 {
				continue // a date that never came: absent where the calendar expects it
			}
			batch(p, d, d.Compact(), 1+seed%len(steps), seed%11 == 0)
			if seed%6 == 1 {
				batch(p, d, d.Compact()+"-r1", len(steps), false) // a re-run of the date
			}
		}
		if pi%4 == 0 {
			events = append(events, model.Event{Spec: model.SpecV1, ID: p + "-hb", Type: model.ProcessHeartbeat, Time: asOf.Add(-time.Hour),
				Pipeline: p, System: model.Consumer, Component: "consumer-1"})
		}
	}
	w := tdb.Sink
	for range 2 { // every event twice, in two parts
		if err := w.Events(ctx, events); err != nil {
			t.Fatal(err)
		}
	}
	server := func(shards int) *fixture {
		srv, err := serve.New(ctx, raw, serve.Options{Database: db, Contracts: contracts, QueryTimeout: 10 * time.Second,
			Now: func() time.Time { return asOf }})
		if err != nil {
			t.Fatal(err)
		}
		serve.SetShards(srv, shards)
		return &fixture{http: newHTTP(t, srv)}
	}
	one, many := server(1), server(3)
	get := func(f *fixture, path string) []byte {
		code, b := f.get(t, path)
		if code != 200 {
			t.Fatalf("GET %s: %d: %s", path, code, b)
		}
		return b
	}
	paths := []string{"/api/v1/batches?from=2026-09-28&to=2026-10-02&size=500"}
	for d := first; d.Compare(last.AddDays(1)) <= 0; d = d.AddDays(1) {
		paths = append(paths, "/?from="+d.String()+"&to="+d.String(), "/api/v1/batches?from="+d.String()+"&to="+d.String()+"&size=500")
	}
	paths = append(paths, "/?from=2026-09-26&to=2026-10-02", "/?from=2026-09-28&to=2026-10-02&status=late")
	absent, reruns := 0, 0
	for _, p := range paths {
		a, b := get(one, p), get(many, p)
		if !bytes.Equal(a, b) {
			t.Errorf("GET %s: the page in 3 shards differs from the page of one Set:\none:  %.2000s\nmany: %.2000s", p, a, b)
		}
		absent += bytes.Count(a, []byte(`"absent": true`))
		reruns += bytes.Count(a, []byte(`-r1"`))
	}
	// The estate has what the test is about.
	if absent == 0 || reruns == 0 {
		t.Fatalf("the pages list %d absent batches and %d re-runs: the estate should have both", absent, reruns)
	}
}

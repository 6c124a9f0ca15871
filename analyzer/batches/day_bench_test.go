package batches_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// dayEvents is one business day of pipelines daily pipelines without a
// contract file, each batch ten events in the order of a full delivery,
// as the all-pipelines day page of deploy/bench/serve reads them.
func dayEvents(pipelines int, d model.Date) []model.Event {
	steps := []struct {
		typ model.EventType
		sys model.System
		obj string
	}{
		{model.JobStarted, model.Producer, ""}, {model.ArtifactStaged, model.Producer, ".csv.tmp"},
		{model.ArtifactFinalized, model.Producer, ".csv"}, {model.JobSucceeded, model.Producer, ""},
		{model.SignalPublished, model.Producer, ".flag"}, {model.ArtifactTransferred, model.Exchange, ".csv"},
		{model.SignalTransferred, model.Exchange, ".flag"}, {model.BatchIdentified, model.Consumer, ""},
		{model.ConsumeStarted, model.Consumer, ""}, {model.ConsumeSucceeded, model.Consumer, ""},
	}
	at := d.In(time.UTC).Add(17 * time.Hour)
	id := d.Compact()
	out := make([]model.Event, 0, pipelines*len(steps))
	for p := range pipelines {
		name := fmt.Sprintf("bench.p%04d.daily", p)
		for i, st := range steps {
			e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s-%02d", name, id, i), Type: st.typ, Time: at.Add(time.Duration(i) * 3 * time.Minute),
				Pipeline: name, BusinessDate: d, BatchID: id, System: st.sys, Component: string(st.sys) + "-1"}
			if st.obj != "" {
				e.Object = strings.ReplaceAll(name, ".", "_") + "_" + id + st.obj
			}
			if st.typ == model.ArtifactFinalized || st.typ == model.ConsumeSucceeded {
				e.Rows, e.HasRows = 1000, true
			}
			out = append(out, e)
		}
	}
	return out
}

// BenchmarkDaySet is what a page of every pipeline for one day asks of a
// Set (query/serve): fold the day's events, declare each pipeline's first
// date (history.Context.AddTo), list the batches with their spans and
// diagnose each as far as its status, keeping a few fields of each. One op is one day of 10,000 pipelines.
func BenchmarkDaySet(b *testing.B) {
	const pipelines = 10_000
	d := model.MustParseDate("2026-09-06")
	events := dayEvents(pipelines, d)
	cs, err := contract.NewSet()
	if err != nil {
		b.Fatal(err)
	}
	asOf := d.AddDays(26).In(time.UTC)
	first := d.AddDays(-5)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := batches.New(cs, asOf)
		s.Brief(pipelines, pipelines)
		s.Covers(d, d)
		for i := range events {
			s.Add(&events[i])
		}
		for i := 0; i < len(events); i += 10 {
			s.Known(events[i].Pipeline, first)
		}
		listed := s.ListFrom(d)
		n := 0
		for _, l := range listed {
			if _, _, _, ok := s.SpanOf(l); !ok {
				b.Fatalf("no span of %s", l.Key)
			}
		}
		s.EachSummaryOf(listed, func(dg *replay.Diagnosis) {
			if dg.Status != "" {
				n++
			}
		})
		if n != pipelines {
			b.Fatalf("%d diagnoses with a status, want %d", n, pipelines)
		}
	}
}

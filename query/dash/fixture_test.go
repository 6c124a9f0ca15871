package dash

import (
	"context"
	"fmt"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// The fixture: a small delivery history whose every dashboard number is
// known (docs/dashboards.md shows the queries' output on it). Two
// pipelines over 2026-09-28..2026-10-01:
//
//	abs  2026-09-28  all 7 boundaries; stored diagnosis broken/delivered (row_mismatch)
//	abs  2026-09-29  all 7 boundaries; no diagnosis: delivered from events
//	abs  2026-09-30  the seed case: stops before signal_delivered; two diagnoses
//	                 (in_progress, then late/not_identified/signal_delivered)
//	fx   2026-09-29  job.succeeded only; diagnosis broken/not_final (success_without_artifact)
//	fx   2026-09-30  job.started, job.failed: failed/not_produced from events
//	fx   2026-10-01  all 7 boundaries, one event stored twice: delivered from events
//
// plus heartbeats (the detector's and a consumer's), four findings and
// four dead-letter rows (one a redelivered copy, one outside the range).
const (
	abs = "account-balance-snapshot.daily"
	fx  = "fx-rates.daily"
)

// fixtureIngestedMS is when the fixture's rows were "ingested": freshness
// shows it.
var fixtureIngestedMS = ms("2026-10-01T07:00:00Z")

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

type fixtureEvent struct {
	pipeline, date, typ, time string
}

type fixtureData struct {
	events    []model.Event
	copies    []model.Event // stored a second time (not yet merged)
	dead      []schema.DeadLetter
	diagnoses []schema.DiagnosisRow
	findings  []schema.FindingRow
}

// fullDay is the seven boundary events of one batch, at the given times of
// day (HH:MM:SS.mmm) on its business date.
func fullDay(pipeline, date string, times [7]string) []fixtureEvent {
	types := [7]string{"job.succeeded", "artifact.finalized", "signal.published", "artifact.transferred",
		"signal.transferred", "batch.identified", "consume.succeeded"}
	var out []fixtureEvent
	for i, typ := range types {
		if times[i] != "" {
			out = append(out, fixtureEvent{pipeline, date, typ, date + "T" + times[i] + "Z"})
		}
	}
	return out
}

var absTimes = [7]string{"17:14:05.010", "17:14:02.480", "17:14:06.300", "17:20:05.120", "17:20:06.000", "17:25:00.000", "17:40:00.000"}

func key(pipeline, date string) model.BatchKey {
	d := model.MustParseDate(date)
	return model.BatchKey{Pipeline: pipeline, BusinessDate: d, BatchID: d.Compact()}
}

func diagnosisJSON(k model.BatchKey, status, verdict, firstMissing string, anomalies ...string) string {
	var an string
	for i, a := range anomalies {
		if i > 0 {
			an += ","
		}
		an += fmt.Sprintf(`{"kind":%q,"detail":"fixture","evidence":[]}`, a)
	}
	return fmt.Sprintf(`{"batch":%q,"pipeline":%q,"business_date":%q,"batch_id":%q,"status":%q,"verdict":%q,"first_missing":%q,"hypotheses":[],"anomalies":[%s]}`,
		k.String(), k.Pipeline, k.BusinessDate.String(), k.BatchID, status, verdict, firstMissing, an)
}

func fixture() fixtureData {
	var evs []fixtureEvent
	evs = append(evs, fullDay(abs, "2026-09-28", [7]string{absTimes[0], absTimes[1], absTimes[2], absTimes[3], absTimes[4], absTimes[5], "18:00:00.000"})...)
	evs = append(evs, fullDay(abs, "2026-09-29", absTimes)...)
	evs = append(evs, fullDay(abs, "2026-09-30", [7]string{absTimes[0], absTimes[1], absTimes[2], absTimes[3]})...)
	evs = append(evs, fixtureEvent{fx, "2026-09-29", "job.succeeded", "2026-09-29T06:00:00Z"})
	evs = append(evs, fixtureEvent{fx, "2026-09-30", "job.started", "2026-09-30T06:00:00Z"},
		fixtureEvent{fx, "2026-09-30", "job.failed", "2026-09-30T06:05:00Z"})
	evs = append(evs, fullDay(fx, "2026-10-01", [7]string{"06:00:00.000", "06:00:01.000", "06:00:02.000", "06:10:00.000", "06:10:01.000", "06:15:00.000", "06:30:00.000"})...)

	var f fixtureData
	for i, fe := range evs {
		t, err := model.ParseTime(fe.time)
		if err != nil {
			panic(err)
		}
		k := key(fe.pipeline, fe.date)
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("fx-%02d", i), Type: model.EventType(fe.typ), Time: t,
			Pipeline: fe.pipeline, BusinessDate: k.BusinessDate, BatchID: k.BatchID, System: model.Producer}
		switch {
		case fe.typ == "job.failed":
			e.Error = "exit 1"
		case fe.typ == "artifact.finalized" || fe.typ == "consume.succeeded":
			e.Rows, e.HasRows = 120345, true
		}
		if fe.typ != "job.succeeded" && fe.typ != "job.started" && fe.typ != "job.failed" && fe.typ != "batch.identified" && fe.typ != "consume.succeeded" {
			e.Object = "file_" + k.BatchID
		}
		f.events = append(f.events, e)
	}
	// The last event (fx 2026-10-01 consume.succeeded) stored twice.
	f.copies = append(f.copies, f.events[len(f.events)-1])
	for _, hb := range []struct{ pipeline, component, time string }{
		{"handoff.detect", "detect-1", "2026-10-01T06:59:00Z"},
		{"handoff.detect", "detect-1", "2026-10-01T06:59:30Z"},
		{abs, "consumer-1", "2026-10-01T06:00:00Z"},
	} {
		t, _ := model.ParseTime(hb.time)
		f.events = append(f.events, model.Event{Spec: model.SpecV1, ID: "hb-" + hb.component + hb.time, Type: model.ProcessHeartbeat,
			Time: t, Pipeline: hb.pipeline, System: model.Operator, Component: hb.component})
	}

	f.diagnoses = []schema.DiagnosisRow{
		{Key: key(abs, "2026-09-28"), AsOfMS: ms("2026-09-29T00:00:00Z"), Status: "broken", Verdict: "delivered",
			Diagnosis: diagnosisJSON(key(abs, "2026-09-28"), "broken", "delivered", "", "row_mismatch")},
		{Key: key(abs, "2026-09-30"), AsOfMS: ms("2026-09-30T18:00:00Z"), Status: "in_progress", Verdict: "not_identified", FirstMissing: "signal_delivered",
			Diagnosis: diagnosisJSON(key(abs, "2026-09-30"), "in_progress", "not_identified", "signal_delivered", "signal_before_final")},
		{Key: key(abs, "2026-09-30"), AsOfMS: ms("2026-10-01T00:00:00Z"), Status: "late", Verdict: "not_identified", FirstMissing: "signal_delivered",
			Diagnosis: diagnosisJSON(key(abs, "2026-09-30"), "late", "not_identified", "signal_delivered")},
		{Key: key(fx, "2026-09-29"), AsOfMS: ms("2026-09-30T00:00:00Z"), Status: "broken", Verdict: "not_final", FirstMissing: "finalized",
			Diagnosis: diagnosisJSON(key(fx, "2026-09-29"), "broken", "not_final", "finalized", "success_without_artifact")},
	}
	f.findings = []schema.FindingRow{
		// f1: the seed batch overdue at signal_delivered, re-published later with more lateness; open.
		{Key: key(abs, "2026-09-30"), Fingerprint: "f1", Seq: 1, State: "open", Kind: "overdue", Name: "signal_delivered",
			RaisedMS: ms("2026-09-30T22:15:00Z"), DeadlineMS: ms("2026-09-30T22:00:00Z"), LatenessMS: 900000, Severity: "warning", Status: "late", Verdict: "not_identified"},
		{Key: key(abs, "2026-09-30"), Fingerprint: "f1", Seq: 2, State: "open", Kind: "overdue", Name: "signal_delivered",
			RaisedMS: ms("2026-09-30T23:00:00Z"), DeadlineMS: ms("2026-09-30T22:00:00Z"), LatenessMS: 3600000, Severity: "critical", Status: "late", Verdict: "not_identified"},
		// f2: fx 09-29 success without artifact, opened then resolved.
		{Key: key(fx, "2026-09-29"), Fingerprint: "f2", Seq: 1, State: "open", Kind: "success_without_artifact",
			RaisedMS: ms("2026-09-29T07:00:00Z"), Severity: "critical", Status: "broken", Verdict: "not_final"},
		{Key: key(fx, "2026-09-29"), Fingerprint: "f2", Seq: 2, State: "resolved", Kind: "success_without_artifact",
			RaisedMS: ms("2026-09-29T07:00:00Z"), ResolvedMS: ms("2026-09-29T09:00:00Z"), Severity: "critical", Status: "broken", Verdict: "not_final"},
		// f3: abs 09-29 was late at consumed, resolved: it was late by 20 minutes.
		{Key: key(abs, "2026-09-29"), Fingerprint: "f3", Seq: 1, State: "open", Kind: "overdue", Name: "consumed",
			RaisedMS: ms("2026-09-29T17:30:00Z"), DeadlineMS: ms("2026-09-29T17:20:00Z"), LatenessMS: 600000, Status: "late", Verdict: "not_consumed"},
		{Key: key(abs, "2026-09-29"), Fingerprint: "f3", Seq: 2, State: "resolved", Kind: "overdue", Name: "consumed",
			RaisedMS: ms("2026-09-29T17:30:00Z"), ResolvedMS: ms("2026-09-29T17:40:00Z"), DeadlineMS: ms("2026-09-29T17:20:00Z"), LatenessMS: 1200000,
			Status: "delivered", Verdict: "delivered"},
		// f4: fx 09-30 overdue at produced (its job failed); open.
		{Key: key(fx, "2026-09-30"), Fingerprint: "f4", Seq: 1, State: "open", Kind: "overdue", Name: "produced",
			RaisedMS: ms("2026-09-30T08:00:00Z"), DeadlineMS: ms("2026-09-30T06:00:00Z"), LatenessMS: 7200000, Severity: "critical", Status: "failed", Verdict: "not_produced"},
	}
	dl := func(received string, topic string, offset int64, reason model.RejectKind, errText string) schema.DeadLetter {
		return schema.DeadLetter{ReceivedMS: ms(received), Source: schema.Source{Topic: topic, Partition: 0, Offset: offset},
			Reason: reason, Error: errText, Payload: []byte("{")}
	}
	f.dead = []schema.DeadLetter{
		dl("2026-10-01T01:00:00Z", "handoff.events", 10, model.RejectBadJSON, "not a JSON object"),
		dl("2026-10-01T02:00:00Z", "handoff.events", 11, model.RejectBadJSON, "not a JSON object"),
		dl("2026-10-01T02:00:05Z", "handoff.events", 11, model.RejectBadJSON, "not a JSON object"), // a redelivered copy
		dl("2026-10-01T03:00:00Z", "handoff.findings", 4, model.RejectMissingField, "missing field fingerprint"),
		dl("2026-08-01T03:00:00Z", "handoff.events", 2, model.RejectMissingField, "missing field pipeline"), // outside the range
	}
	return f
}

// rows returns the fixture as the schema's row types.
func (f fixtureData) rows() (events, copies *schema.EventBatch, diagnoses *schema.DiagnosisRows, findings *schema.FindingRows) {
	events, copies = &schema.EventBatch{}, &schema.EventBatch{}
	for i := range f.events {
		events.Add(&f.events[i], schema.Source{Topic: "handoff.events", Offset: int64(i)}, fixtureIngestedMS)
	}
	for i := range f.copies {
		copies.Add(&f.copies[i], schema.Source{Topic: "handoff.events", Offset: int64(1000 + i)}, fixtureIngestedMS-1000)
	}
	diagnoses, findings = &schema.DiagnosisRows{}, &schema.FindingRows{}
	for i, d := range f.diagnoses {
		diagnoses.Add(d, schema.Source{Topic: "handoff.diagnoses", Offset: int64(i)}, fixtureIngestedMS)
	}
	for i, r := range f.findings {
		findings.Add(r, schema.Source{Topic: "handoff.findings", Offset: int64(i)}, fixtureIngestedMS)
	}
	return
}

// load stores the fixture through the writer, store/writer.
func (f fixtureData) load(ctx context.Context, s *writer.Sink) error {
	events, copies, diagnoses, findings := f.rows()
	if err := s.InsertEvents(ctx, events); err != nil {
		return err
	}
	// A separate INSERT: a separate part, so the copy is not merged away
	// before the queries run.
	if err := s.InsertEvents(ctx, copies); err != nil {
		return err
	}
	if err := s.InsertDeadLetters(ctx, f.dead); err != nil {
		return err
	}
	if err := s.InsertColumns(ctx, schema.Diagnoses, schema.DiagnosisColumns, diagnoses.Columns()); err != nil {
		return err
	}
	return s.InsertColumns(ctx, schema.Findings, schema.FindingColumns, findings.Columns())
}

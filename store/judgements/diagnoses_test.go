package judgements_test

import (
	"context"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/judgements"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

// TestDiagnosesRead checks the stored diagnoses' reads on the 18.16
// server: of a batch's rows the latest as-of wins whatever the storage
// order, the pipeline and date filters select, and a batch with no row
// has no JSON.
func TestDiagnosesRead(t *testing.T) {
	d := storetest.NewDB(t, "diagnoses_test")
	conn, db := d.Conn, d.Name
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := func(p, d string) model.BatchKey {
		date := model.MustParseDate(d)
		return model.BatchKey{Pipeline: p, BusinessDate: date, BatchID: date.Compact()}
	}
	a, b, c := key("p.one", "2026-09-30"), key("p.one", "2026-10-01"), key("p.two", "2026-09-30")
	var rows schema.DiagnosisRows
	for i, r := range []schema.DiagnosisRow{
		{Key: a, AsOfMS: 2000, Status: "delivered", Verdict: "delivered", Diagnosis: `{"as_of":2}`},
		{Key: a, AsOfMS: 1000, Status: "late", Verdict: "not_identified", FirstMissing: "identified", Diagnosis: `{"as_of":1}`},
		{Key: b, AsOfMS: 1000, Status: "failed", Verdict: "not_produced", FirstMissing: "produced", Diagnosis: `{"b":1}`},
		{Key: c, AsOfMS: 1000, Status: "late", Verdict: "not_consumed", FirstMissing: "consumed", Diagnosis: `{"c":1}`},
	} {
		rows.Add(r, schema.Source{Topic: "handoff.diagnoses", Offset: int64(i)}, 1)
	}
	if err := d.Sink.InsertColumns(ctx, schema.Diagnoses, schema.DiagnosisColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}

	read := func(pipeline string, from, to model.Date) map[model.BatchKey]judgements.DiagnosisSummary {
		t.Helper()
		q, err := judgements.SelectDiagnoses(db, pipeline, from, to)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := conn.Query(ctx, q.SQL, q.Args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		out := map[model.BatchKey]judgements.DiagnosisSummary{}
		for rs.Next() {
			k, d, err := judgements.ScanDiagnosis(rs)
			if err != nil {
				t.Fatal(err)
			}
			out[k] = d
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	all := read("", a.BusinessDate, b.BusinessDate)
	if len(all) != 3 || all[a] != (judgements.DiagnosisSummary{Status: "delivered", Verdict: "delivered", AsOfMS: 2000}) ||
		all[c].FirstMissing != "consumed" {
		t.Errorf("every pipeline: %+v; want 3 batches, %s's latest (delivered, as of 2000)", all, a)
	}
	if one := read("p.one", b.BusinessDate, b.BusinessDate); len(one) != 1 || one[b].Status != "failed" {
		t.Errorf("p.one on %s: %+v, want %s failed only", b.BusinessDate, one, b)
	}
	if _, err := judgements.SelectDiagnoses(db, "", model.Date{}, b.BusinessDate); err == nil {
		t.Error("SelectDiagnoses without from: no error")
	}

	jsonOf := func(k model.BatchKey) []byte {
		t.Helper()
		q, err := judgements.SelectDiagnosis(db, k)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		rs, err := conn.Query(ctx, q.SQL, q.Args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			if out, err = judgements.ScanDiagnosisJSON(rs); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	if got := string(jsonOf(a)); got != `{"as_of":2}` {
		t.Errorf("%s's JSON: %s, want the latest", a, got)
	}
	if got := jsonOf(key("p.one", "2026-10-02")); got != nil {
		t.Errorf("a batch with no row: %s, want nil", got)
	}
}

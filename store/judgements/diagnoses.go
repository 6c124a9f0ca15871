package judgements

import (
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// DiagnosisSummary is the latest stored diagnosis of a batch (the
// diagnoses_v2 row with the latest as_of_ms) as lists show it: what the
// table copies out of the diagnosis JSON.
type DiagnosisSummary struct {
	Status, Verdict, FirstMissing string
	AsOfMS                        int64
}

// SelectDiagnoses returns the query reading the latest stored diagnosis of
// every batch of pipeline ("" for every pipeline) with a business date in
// [from, to] (both required) from database db: argMax by as_of_ms, never
// FINAL. ScanDiagnosis reads its rows.
func SelectDiagnoses(db, pipeline string, from, to model.Date) (Query, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return Query{}, err
	}
	if from.IsZero() || to.IsZero() {
		return Query{}, bad("from", "both from and to are required to read stored diagnoses")
	}
	cond := "business_date >= toDate(?) AND business_date <= toDate(?)"
	args := []any{from.String(), to.String()}
	if pipeline != "" {
		cond = "pipeline = ? AND " + cond
		args = append([]any{pipeline}, args...)
	}
	return Query{
		SQL: "SELECT pipeline, business_date, batch_id, argMax(status, as_of_ms), argMax(verdict, as_of_ms), " +
			"argMax(first_missing, as_of_ms), max(as_of_ms) FROM " + db + "." + schema.Diagnoses + " WHERE " + cond +
			" GROUP BY pipeline, business_date, batch_id",
		Args: args,
	}, nil
}

// ScanDiagnosis reads the current row of a SelectDiagnoses query.
func ScanDiagnosis(row Row) (model.BatchKey, DiagnosisSummary, error) {
	var (
		p, b string
		d    time.Time
		s    DiagnosisSummary
	)
	if err := row.Scan(&p, &d, &b, &s.Status, &s.Verdict, &s.FirstMissing, &s.AsOfMS); err != nil {
		return model.BatchKey{}, s, err
	}
	return model.BatchKey{Pipeline: p, BusinessDate: schema.DateFromColumn(d), BatchID: b}, s, nil
}

// SelectDiagnosis returns the query reading the JSON of the latest stored
// diagnosis of batch k from database db, and how many rows it has (0: none
// stored). ScanDiagnosisJSON reads its one row.
func SelectDiagnosis(db string, k model.BatchKey) (Query, error) {
	if err := schema.CheckDatabase(db); err != nil {
		return Query{}, err
	}
	return Query{
		SQL:  "SELECT argMax(diagnosis, as_of_ms), count() FROM " + db + "." + schema.Diagnoses + " WHERE pipeline = ? AND business_date = toDate(?) AND batch_id = ?",
		Args: []any{k.Pipeline, k.BusinessDate.String(), k.BatchID},
	}, nil
}

// ScanDiagnosisJSON reads the row of a SelectDiagnosis query: the
// diagnosis JSON, or nil when none is stored.
func ScanDiagnosisJSON(row Row) ([]byte, error) {
	var (
		text string
		n    uint64
	)
	if err := row.Scan(&text, &n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return []byte(text), nil
}

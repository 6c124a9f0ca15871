package results

import "github.com/handoff-dev/handoff/store/schema"

// The rows of diagnoses_v2 and findings_v2 are store/schema's
// (DiagnosisRows, FindingRows: the schema's one home); a finding record
// becomes its row by schema.FindingRowOf (ParseFinding), a diagnosis
// record by row below.

// row returns the diagnoses_v2 row of d.
func (d *Diagnosis) row() schema.DiagnosisRow {
	return schema.DiagnosisRow{Key: d.Key, AsOfMS: d.AsOfMS, Status: d.Status, Verdict: d.Verdict,
		FirstMissing: d.FirstMissing, Diagnosis: d.JSON}
}

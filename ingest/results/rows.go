package results

import "github.com/handoff-dev/handoff/store/schema"

// The rows of diagnoses_v2 and findings_v2 are store/schema's
// (DiagnosisRows, FindingRows: the schema's one home); these map the
// records read from Kafka onto them.

// row returns the diagnoses_v2 row of d.
func (d *Diagnosis) row() schema.DiagnosisRow {
	return schema.DiagnosisRow{Key: d.Key, AsOfMS: d.AsOfMS, Status: d.Status, Verdict: d.Verdict,
		FirstMissing: d.FirstMissing, Diagnosis: d.JSON}
}

// row returns the findings_v2 row of f.
func (f *Finding) row() schema.FindingRow {
	return schema.FindingRow{Key: f.Key, Fingerprint: f.Fingerprint, Seq: f.Seq, State: f.State, Kind: f.Kind, Name: f.Name,
		RaisedMS: f.RaisedMS, ResolvedMS: f.ResolvedMS, DeadlineMS: f.DeadlineMS, LatenessMS: f.LatenessMS,
		Severity: f.Severity, Owner: f.Owner, LabelKeys: f.LabelKeys, LabelValues: f.LabelValues,
		EvidenceAsOfMS: f.EvidenceAsOfMS, Status: f.Status, Verdict: f.Verdict, FirstMissing: f.FirstMissing,
		Diagnosis: f.Diagnosis}
}

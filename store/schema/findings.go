package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// A finding has one Go shape, the analyzer's detect.Finding, and one row
// shape in storage, FindingRow. FindingRowOf is the encoder (what handoff
// ingest stores of a finding record) and FindingRow.Finding the one
// decoder back (what the detector's restore, `handoff findings` and
// `handoff serve` read).

// FindingRowOf returns the findings_v2 row of f: times and durations
// (the reporting delay among them) in Unix milliseconds, labels as sorted keys and values, the status and verdict
// the record was routed by (else its diagnosis'), the diagnosis'
// first_missing, and the diagnosis as the analyzer encodes it (byte for
// byte what the detector wrote: the encoding round-trips). f.Seq must fit
// in a UInt32 and every time be storable (model.CheckStorableTime): the
// caller checks (ingest/results does, naming the field).
func FindingRowOf(f *detect.Finding) FindingRow { return FindingRowWith(f, "") }

// FindingRowWith is FindingRowOf with the diagnosis column given: diagnosis
// must be f.Diagnosis.AppendJSON's bytes, as detect.ParseFindingCanonical
// returns them from a record in that layout, so that a consumer storing
// what it read need not encode the diagnosis again; "" encodes it.
func FindingRowWith(f *detect.Finding, diagnosis string) FindingRow {
	if diagnosis == "" {
		diagnosis = string(f.Diagnosis.AppendJSON(nil))
	}
	r := FindingRow{
		Key: f.Batch, Fingerprint: f.Fingerprint, Seq: uint32(f.Seq), State: string(f.State), Kind: string(f.Kind), Name: f.Name,
		RaisedMS: msOf(f.RaisedAt), ResolvedMS: msOf(f.ResolvedAt), DeadlineMS: msOf(f.Deadline), LatenessMS: f.Lateness.Milliseconds(),
		ReportingDelayMS: f.ReportingDelay.Milliseconds(), Resolution: f.Resolution, SupersededBy: f.SupersededBy,
		Severity: f.Severity, Owner: f.Owner, Root: f.Root, EvidenceAsOfMS: msOf(f.EvidenceAsOf),
		Status: string(f.Status), Verdict: f.Verdict, FirstMissing: f.Diagnosis.FirstMissing,
		Diagnosis: diagnosis,
	}
	if r.Status == "" {
		r.Status = string(f.Diagnosis.Status)
	}
	if r.Verdict == "" {
		r.Verdict = f.Diagnosis.Verdict.String()
	}
	if len(f.Labels) > 0 {
		r.LabelKeys = make([]string, 0, len(f.Labels))
		for k := range f.Labels {
			r.LabelKeys = append(r.LabelKeys, k)
		}
		slices.Sort(r.LabelKeys)
		r.LabelValues = make([]string, len(r.LabelKeys))
		for i, k := range r.LabelKeys {
			r.LabelValues[i] = f.Labels[k]
		}
	}
	return r
}

// Finding decodes the row back into the analyzer's Finding. A row read
// without its diagnosis (Diagnosis "": the listings and the restore leave
// that column out, it is the bulk of a row) gives a Finding whose
// Diagnosis holds only what the table copies out of it: the batch, status,
// verdict and first missing boundary. An error names the column that does
// not decode.
func (r *FindingRow) Finding() (detect.Finding, error) {
	f := r.Tracked()
	f.Lateness, f.EvidenceAsOf = time.Duration(r.LatenessMS)*time.Millisecond, timeOfMS(r.EvidenceAsOfMS)
	f.ReportingDelay, f.Resolution, f.SupersededBy = time.Duration(r.ReportingDelayMS)*time.Millisecond, r.Resolution, r.SupersededBy
	f.Severity, f.Owner, f.Root = r.Severity, r.Owner, r.Root
	if f.Root == "" || f.Root == detect.RootFingerprint(r.Key) {
		// Its own incident (a row from before the column existed too).
		f.Root, f.RootBatch = detect.RootFingerprint(r.Key), r.Key.String()
	}
	if len(r.LabelKeys) > 0 {
		if len(r.LabelValues) != len(r.LabelKeys) {
			return f, fmt.Errorf("finding %s: %d label_keys but %d label_values", r.Fingerprint, len(r.LabelKeys), len(r.LabelValues))
		}
		f.Labels = make(map[string]string, len(r.LabelKeys))
		for i, k := range r.LabelKeys {
			f.Labels[k] = r.LabelValues[i]
		}
	}
	if r.Diagnosis != "" {
		if err := json.Unmarshal([]byte(r.Diagnosis), &f.Diagnosis); err != nil {
			return f, fmt.Errorf("finding %s: column diagnosis: %w", r.Fingerprint, err)
		}
		f.RootBatch = rootBatch(&f)
		return f, nil
	}
	d := &f.Diagnosis
	d.Batch, d.Pipeline, d.BusinessDate, d.BatchID = r.Key.String(), r.Key.Pipeline, r.Key.BusinessDate.String(), r.Key.BatchID
	d.Status, d.FirstMissing = replay.Status(r.Status), r.FirstMissing
	if r.Verdict != "" {
		v, err := model.ParseHypothesis(r.Verdict)
		if err != nil {
			return f, fmt.Errorf("finding %s: column verdict %q: %w", r.Fingerprint, r.Verdict, err)
		}
		d.Verdict = v
	}
	return f, nil
}

// Tracked decodes the part of the row a detector tracks of a finding it
// restores (detect.Detector.Restore): the fingerprint, batch, state, kind,
// name, seq, status, verdict and times (raised, resolved, deadline), the
// rest left zero (Finding decodes it too). It cannot fail. A takeover
// restores hundreds of thousands of findings: the incident's root and the
// diagnosis's copies of the batch key, which Finding computes and the
// restore never reads, took as long as reading the rows.
func (r *FindingRow) Tracked() detect.Finding {
	return detect.Finding{
		Fingerprint: r.Fingerprint, State: detect.State(r.State), Kind: detect.Kind(r.Kind), Name: r.Name, Batch: r.Key,
		Status: replay.Status(r.Status), Verdict: r.Verdict, Seq: int(r.Seq),
		RaisedAt: timeOfMS(r.RaisedMS), ResolvedAt: timeOfMS(r.ResolvedMS), Deadline: timeOfMS(r.DeadlineMS),
	}
}

// msOf is t in Unix milliseconds, 0 for the zero time (none).
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// timeOfMS is the UTC time of a millisecond column, where 0 means none.
func timeOfMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// rootBatch is the batch of f's incident, as its diagnosis names it: the
// first root of what blocks it, or its own batch.
func rootBatch(f *detect.Finding) string {
	if b := f.Diagnosis.Blocked; b != nil && len(b.Roots) > 0 {
		return b.Roots[0].Batch
	}
	return f.Batch.String()
}

// EventsPartitionHeader is the Kafka header of a findings-topic record
// that says which partition of the events topic the finding's batch
// belongs to, and among how many: "3/6" (AppendEventsPartition). The
// detector sets it (judge/live), handoff ingest stores it in
// findings_v2's events_partition and events_partitions (ingest/results),
// and a detector taking over partitions reads back only their findings
// (store/history). A header and not a field of the record: the finding's
// JSON stays the finding's, the same whoever publishes it.
const EventsPartitionHeader = "handoff-events-partition"

// AppendEventsPartition appends the value of EventsPartitionHeader for
// partition p of n to b.
func AppendEventsPartition(b []byte, p, n int) []byte {
	b = strconv.AppendInt(b, int64(p), 10)
	b = append(b, '/')
	return strconv.AppendInt(b, int64(n), 10)
}

// ParseEventsPartition reads a value of EventsPartitionHeader: partition p
// of n, with 0 <= p < n. ok is false for anything else (the partition is
// then not known, and a takeover reads the finding as it reads those
// stored before the header existed).
func ParseEventsPartition(v []byte) (p, n int32, ok bool) {
	i := bytes.IndexByte(v, '/')
	if i <= 0 || i == len(v)-1 {
		return 0, 0, false
	}
	pp, err1 := strconv.ParseInt(string(v[:i]), 10, 32)
	nn, err2 := strconv.ParseInt(string(v[i+1:]), 10, 32)
	if err1 != nil || err2 != nil || pp < 0 || pp >= nn {
		return 0, 0, false
	}
	return int32(pp), int32(nn), true
}

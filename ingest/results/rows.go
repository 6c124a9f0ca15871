package results

import (
	"time"

	"github.com/handoff-dev/handoff/ingest/sink"
)

// DiagnosisColumns is the column list of every INSERT into diagnoses_v2.
const DiagnosisColumns = "pipeline, business_date, batch_id, batch, as_of_ms, status, verdict, first_missing, diagnosis, " +
	"ingested_ms, kafka_topic, kafka_partition, kafka_offset"

// FindingColumns is the column list of every INSERT into findings_v2.
const FindingColumns = "pipeline, business_date, batch_id, batch, fingerprint, seq, state, kind, name, " +
	"raised_ms, resolved_ms, deadline_ms, lateness_ms, severity, owner, `labels.key`, `labels.value`, " +
	"evidence_as_of_ms, status, verdict, first_missing, diagnosis, ingested_ms, kafka_topic, kafka_partition, kafka_offset"

// position is the columns every results row shares: where the batch is and
// where the record was read.
type position struct {
	pipeline     []string
	businessDate []time.Time
	batchID      []string
	batch        []string
	ingestedMS   []int64
	topic        []string
	partition    []int32
	offset       []int64
}

func (p *position) add(pipeline string, date time.Time, batchID, batch string, src sink.Source, ingestedMS int64) {
	p.pipeline = append(p.pipeline, pipeline)
	p.businessDate = append(p.businessDate, date)
	p.batchID = append(p.batchID, batchID)
	p.batch = append(p.batch, batch)
	p.ingestedMS = append(p.ingestedMS, ingestedMS)
	p.topic = append(p.topic, src.Topic)
	p.partition = append(p.partition, src.Partition)
	p.offset = append(p.offset, src.Offset)
}

// diagnosisRows holds diagnoses as ClickHouse columns. A batch of rows is
// kept until it is stored, so a failed INSERT can be sent again.
type diagnosisRows struct {
	position
	asOfMS       []int64
	status       []string
	verdict      []string
	firstMissing []string
	json         []string
}

func (r *diagnosisRows) len() int { return len(r.asOfMS) }

func (r *diagnosisRows) add(d *Diagnosis, src sink.Source, ingestedMS int64) {
	r.position.add(d.Key.Pipeline, sink.DateColumn(d.Key.BusinessDate), d.Key.BatchID, d.Key.String(), src, ingestedMS)
	r.asOfMS = append(r.asOfMS, d.AsOfMS)
	r.status = append(r.status, d.Status)
	r.verdict = append(r.verdict, d.Verdict)
	r.firstMissing = append(r.firstMissing, d.FirstMissing)
	r.json = append(r.json, d.JSON)
}

func (r *diagnosisRows) columns() []any {
	return []any{r.pipeline, r.businessDate, r.batchID, r.batch, r.asOfMS, r.status, r.verdict, r.firstMissing, r.json,
		r.ingestedMS, r.topic, r.partition, r.offset}
}

// findingRows holds findings as ClickHouse columns.
type findingRows struct {
	position
	fingerprint    []string
	seq            []uint32
	state          []string
	kind           []string
	name           []string
	raisedMS       []int64
	resolvedMS     []int64
	deadlineMS     []int64
	latenessMS     []int64
	severity       []string
	owner          []string
	labelKeys      [][]string
	labelValues    [][]string
	evidenceAsOfMS []int64
	status         []string
	verdict        []string
	firstMissing   []string
	diagnosis      []string
}

func (r *findingRows) len() int { return len(r.fingerprint) }

func (r *findingRows) add(f *Finding, src sink.Source, ingestedMS int64) {
	r.position.add(f.Key.Pipeline, sink.DateColumn(f.Key.BusinessDate), f.Key.BatchID, f.Key.String(), src, ingestedMS)
	r.fingerprint = append(r.fingerprint, f.Fingerprint)
	r.seq = append(r.seq, f.Seq)
	r.state = append(r.state, f.State)
	r.kind = append(r.kind, f.Kind)
	r.name = append(r.name, f.Name)
	r.raisedMS = append(r.raisedMS, f.RaisedMS)
	r.resolvedMS = append(r.resolvedMS, f.ResolvedMS)
	r.deadlineMS = append(r.deadlineMS, f.DeadlineMS)
	r.latenessMS = append(r.latenessMS, f.LatenessMS)
	r.severity = append(r.severity, f.Severity)
	r.owner = append(r.owner, f.Owner)
	keys, values := f.LabelKeys, f.LabelValues
	if keys == nil {
		keys, values = []string{}, []string{}
	}
	r.labelKeys = append(r.labelKeys, keys)
	r.labelValues = append(r.labelValues, values)
	r.evidenceAsOfMS = append(r.evidenceAsOfMS, f.EvidenceAsOfMS)
	r.status = append(r.status, f.Status)
	r.verdict = append(r.verdict, f.Verdict)
	r.firstMissing = append(r.firstMissing, f.FirstMissing)
	r.diagnosis = append(r.diagnosis, f.Diagnosis)
}

func (r *findingRows) columns() []any {
	return []any{r.pipeline, r.businessDate, r.batchID, r.batch, r.fingerprint, r.seq, r.state, r.kind, r.name,
		r.raisedMS, r.resolvedMS, r.deadlineMS, r.latenessMS, r.severity, r.owner, r.labelKeys, r.labelValues,
		r.evidenceAsOfMS, r.status, r.verdict, r.firstMissing, r.diagnosis, r.ingestedMS, r.topic, r.partition, r.offset}
}

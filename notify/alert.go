package notify

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Alert is one alert of Alertmanager's v2 API (POST /api/v2/alerts takes a
// JSON array of them). Alertmanager identifies an alert by its label set:
// the same labels sent again update the alert (endsAt moves on), they do not
// raise a second one.
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// MarshalJSON writes a with its times as every handoff JSON time: RFC 3339
// UTC with three fractional digits (encoding/json would trim the zeros).
func (a Alert) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     string            `json:"startsAt"`
		EndsAt       string            `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL,omitempty"`
	}{a.Labels, a.Annotations, fmtTime(a.StartsAt), fmtTime(a.EndsAt), a.GeneratorURL})
}

// alertnames maps the finding kinds that are not anomalies to an alertname;
// every anomaly kind is HandoffBatchAnomaly (its kind is the kind label).
var alertnames = map[detect.Kind]string{
	detect.Overdue: "HandoffBatchOverdue",
	detect.Missing: "HandoffBatchMissing",
	detect.Failed:  "HandoffBatchFailed",
	detect.Unusual: "HandoffBatchUnusual",
}

// Labels returns the routing labels of finding f: alertname, the batch
// (pipeline, business_date, batch_id, batch), kind, boundary (where the
// kind has one), status, verdict, severity and owner, then the contract's
// labels (the contract parser refuses a contract label named like one of
// these, so none is overwritten). Together they identify the finding's
// condition as its fingerprint does, plus status and verdict.
func Labels(f *detect.Finding) map[string]string {
	l := make(map[string]string, 11+len(f.Labels))
	for k, v := range f.Labels {
		l[k] = v
	}
	name, ok := alertnames[f.Kind]
	if !ok {
		name = "HandoffBatchAnomaly"
	}
	l["alertname"] = name
	l["pipeline"] = f.Batch.Pipeline
	l["business_date"] = f.Batch.BusinessDate.String()
	l["batch_id"] = f.Batch.BatchID
	l["batch"] = f.Batch.String()
	l["kind"] = string(f.Kind)
	if b := boundary(f); b != "" {
		l["boundary"] = b
	}
	l["status"] = string(f.Status)
	l["verdict"] = f.Verdict
	l["severity"] = f.Severity
	switch {
	case f.Kind == detect.Unusual:
		// An early warning never pages, whatever the record says: its
		// route is severity info (deploy/alertmanager/alertmanager.yml).
		l["severity"] = contract.SeverityInfo
	case l["severity"] == "":
		l["severity"] = "warning"
	}
	if f.Owner != "" {
		l["owner"] = f.Owner
	}
	return l
}

// boundary is the boundary a finding is about: its name for overdue and
// failed, the first missing boundary for missing (whose name is a
// verdict), none for anomalies.
func boundary(f *detect.Finding) string {
	switch f.Kind {
	case detect.Overdue, detect.Failed, detect.Unusual:
		return f.Name
	case detect.Missing:
		return f.Diagnosis.FirstMissing
	}
	return ""
}

// BatchURL returns the link to the batch page of `handoff serve`
// (/batches/{pipeline}/{business_date}/{batch_id}) under base, or "" when
// base is empty.
func BatchURL(base string, k model.BatchKey) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/batches/" + url.PathEscape(k.Pipeline) + "/" +
		k.BusinessDate.String() + "/" + url.PathEscape(k.BatchID)
}

// IncidentURL returns the link to the incident page of `handoff serve`
// (/incidents/{pipeline}/{business_date}/{batch_id}) of root batch k under
// base, or "" when base is empty.
func IncidentURL(base string, k model.BatchKey) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/incidents/" + url.PathEscape(k.Pipeline) + "/" +
		k.BusinessDate.String() + "/" + url.PathEscape(k.BatchID)
}

// incidentRoot is the root batch of f's incident: its RootBatch when a
// blocked finding names one, else its own batch.
func incidentRoot(f *detect.Finding) model.BatchKey {
	if f.RootBatch != "" && f.RootBatch != f.Batch.String() {
		if k, err := model.ParseBatchKey(f.RootBatch); err == nil {
			return k
		}
	}
	return f.Batch
}

// Annotations returns what a person reads in the alert: a one-line
// summary (the symptom), a description (where the delivery stopped, by
// when it was due, how late, what is known), the first missing boundary,
// deadline and lateness, how a resolved finding ended when not the plain
// way (resolution, superseded_by, reporting_delay), the safe next step,
// the batch page, the incident page of its root (its own batch unless it
// is blocked) and the finding's fingerprint and record number.
func Annotations(f *detect.Finding, serveURL string) map[string]string {
	d := &f.Diagnosis
	a := map[string]string{
		"summary":        summary(f),
		"description":    description(f),
		"fingerprint":    f.Fingerprint,
		"seq":            strconv.Itoa(f.Seq),
		"evidence_as_of": fmtTime(f.EvidenceAsOf),
	}
	if d.FirstMissing != "" {
		a["first_missing"] = d.FirstMissing
	}
	if !f.Deadline.IsZero() {
		a["deadline"] = fmtTime(f.Deadline)
		a["lateness"] = replay.FormatDuration(f.Lateness)
	}
	// How a resolved finding ended, when not the plain way: replaced by
	// another attempt of its date, or on time and reported late (its
	// lateness is then 0 and the delay is its own figure).
	if f.Resolution != "" {
		a["resolution"] = f.Resolution
	}
	if f.SupersededBy != "" {
		a["superseded_by"] = f.SupersededBy
	}
	if f.ReportingDelay > 0 {
		a["reporting_delay"] = replay.FormatDuration(f.ReportingDelay)
	}
	if d.NextStep.Action != "" {
		a["next_step"] = string(d.NextStep.Action) + ": " + d.NextStep.Summary
	}
	if u := BatchURL(serveURL, f.Batch); u != "" {
		a["batch_url"] = u
	}
	if u := IncidentURL(serveURL, incidentRoot(f)); u != "" {
		a["incident_url"] = u
	}
	return a
}

// summary is the one-line symptom, in the words of the seed case: which
// batch, what is wrong, and where the delivery stopped.
func summary(f *detect.Finding) string {
	var what string
	switch f.Kind {
	case detect.Overdue:
		what = f.Name + " overdue by " + replay.FormatDuration(f.Lateness)
	case detect.Missing:
		what = "expected batch has no delivery event, " + replay.FormatDuration(f.Lateness) + " past its first deadline"
	case detect.Failed:
		what = "delivery failed at " + f.Name
	default:
		what = "anomaly " + string(f.Kind)
	}
	s := f.Batch.String() + ": " + what + " (status " + string(f.Status) + ", verdict " + f.Verdict + ")"
	if f.State == detect.Resolved {
		s = "resolved: " + s
	}
	return s
}

// description tells the story behind the summary in a few sentences: the
// verdict against the job's own success, the located break and its
// deadline, and the anomalies' details.
func description(f *detect.Finding) string {
	d := &f.Diagnosis
	var b strings.Builder
	b.WriteString("Batch " + f.Batch.String() + " of pipeline " + f.Batch.Pipeline + " is " + string(f.Status) +
		"; the delivery stopped at verdict " + f.Verdict + ".")
	if d.FirstMissing != "" {
		b.WriteString(" First missing boundary: " + d.FirstMissing)
		if !f.Deadline.IsZero() {
			b.WriteString(", due " + fmtTime(f.Deadline) + ", late by " + replay.FormatDuration(f.Lateness))
		}
		b.WriteString(".")
	}
	for _, an := range d.Anomalies {
		if string(an.Kind) == string(f.Kind) {
			b.WriteString(" " + string(an.Kind) + ": " + an.Detail + ".")
		}
	}
	if f.State == detect.Resolved {
		b.WriteString(" Resolved at " + fmtTime(f.ResolvedAt))
		if f.Resolution != "" {
			b.WriteString(": " + f.Resolution)
		}
		b.WriteString(".")
	}
	b.WriteString(" Evidence as of " + fmtTime(f.EvidenceAsOf) + ".")
	return b.String()
}

// AlertOf returns the Alertmanager alert of finding f as sent at now: an
// open finding fires from its raised_at until now + lease (the lease is
// renewed by sending it again before it runs out); a resolved one ends at
// its resolved_at. startsAt is the finding's own raised_at, never the
// sending time, so that a re-send (after a restart too) is the same alert.
func AlertOf(f *detect.Finding, serveURL string, now time.Time, lease time.Duration) Alert {
	a := Alert{
		Labels:       Labels(f),
		Annotations:  Annotations(f, serveURL),
		StartsAt:     f.RaisedAt.UTC(),
		EndsAt:       now.Add(lease).UTC().Truncate(time.Millisecond),
		GeneratorURL: BatchURL(serveURL, f.Batch),
	}
	if f.State == detect.Resolved {
		a.EndsAt = f.ResolvedAt.UTC()
		if a.EndsAt.Before(a.StartsAt) {
			a.EndsAt = a.StartsAt
		}
	}
	return a
}

func fmtTime(t time.Time) string { return string(model.AppendTime(nil, t.UTC())) }

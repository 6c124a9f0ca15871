// Package openlineage maps OpenLineage run events (https://openlineage.io,
// spec 2-0-x), as schedulers such as Airflow, Dagster, dbt and Spark emit
// them, to handoff's boundary events, through the pipelines' contracts
// (the contract key openlineage). It is pure: decoding and mapping only;
// ingest/lineage moves the messages.
//
// The mapping (docs/openlineage.md has examples):
//
//	START                      -> job.started
//	COMPLETE                   -> job.succeeded
//	FAIL                       -> job.failed (error: the errorMessage facet, else "FAIL")
//	ABORT                      -> job.failed (error: "aborted", or the errorMessage facet)
//	RUNNING, OTHER, none       -> no job event
//	an output dataset with the outputStatistics facet whose name (its last
//	path element) is the contract's artifact for the batch, on COMPLETE or
//	an event without eventType
//	                           -> artifact.finalized (rows = rowCount, bytes = size)
//
// The batch comes from the contract, never from the run id: a retry with a
// new run id maps to the same batch.
package openlineage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// RunEvent is the part of an OpenLineage run event the mapping reads.
// Unknown fields and facets are ignored.
type RunEvent struct {
	EventType string `json:"eventType"`
	EventTime string `json:"eventTime"`
	Producer  string `json:"producer"`
	Run       struct {
		RunID  string                     `json:"runId"`
		Facets map[string]json.RawMessage `json:"facets"`
	} `json:"run"`
	Job struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"job"`
	Outputs []Dataset `json:"outputs"`

	time time.Time
}

// Dataset is an output dataset.
type Dataset struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	OutputFacets struct {
		// Numbers as written: a count out of range or not whole is named
		// by its field rather than failing the whole event as bad JSON.
		OutputStatistics *struct {
			RowCount *json.Number `json:"rowCount"`
			Size     *json.Number `json:"size"`
		} `json:"outputStatistics"`
	} `json:"outputFacets"`
}

// Error is a run event that cannot be accepted; Field names what is wrong.
type Error struct {
	Field, Reason string
}

func (e *Error) Error() string { return "openlineage: " + e.Field + ": " + e.Reason }

// MaxSize is the largest run event accepted, as for handoff's own events.
const MaxSize = model.MaxEventSize

// Decode reads one run event. It fails on what makes the event unusable:
// not a JSON object, a member stated twice, no eventTime or one that is
// not RFC 3339 or outside what handoff stores (1970-2105), no run.runId,
// no job.name, control characters in the run id, job or producer, an
// unknown eventType. Offsets and nanoseconds in eventTime are fine (kept
// to the millisecond, in UTC).
func Decode(data []byte) (RunEvent, error) {
	var ev RunEvent
	if len(data) > MaxSize {
		return ev, &Error{"event", fmt.Sprintf("%d bytes, over the %d-byte limit", len(data), MaxSize)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&ev); err != nil {
		return ev, &Error{"event", "invalid JSON: " + err.Error()}
	}
	if dec.More() {
		return ev, &Error{"event", "more than one JSON value"}
	}
	if k, dup := firstDuplicate(data); dup {
		return ev, &Error{k, "duplicate key: the event states it twice and which value holds is ambiguous"}
	}
	if ev.EventTime == "" {
		return ev, &Error{"eventTime", "missing"}
	}
	t, err := time.Parse(time.RFC3339Nano, ev.EventTime)
	if err != nil {
		return ev, &Error{"eventTime", strconv.Quote(ev.EventTime) + ": want RFC 3339, such as 2026-10-01T01:14:05.010+08:00"}
	}
	ev.time = t.UTC().Truncate(time.Millisecond)
	if ms := ev.time.UnixMilli(); ms < model.MinTimeMillis || ms > model.MaxTimeMillis || ev.time.Year() < 1970 {
		return ev, &Error{"eventTime", strconv.Quote(ev.EventTime) + ": outside 1970-01-01..2105-12-31, the times handoff stores"}
	}
	switch ev.EventType {
	case "", "START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER":
	default:
		return ev, &Error{"eventType", strconv.Quote(ev.EventType) + ": want START, RUNNING, COMPLETE, ABORT, FAIL or OTHER"}
	}
	if ev.Run.RunID == "" {
		return ev, &Error{"run.runId", "missing"}
	}
	if ev.Job.Name == "" {
		return ev, &Error{"job.name", "missing"}
	}
	for _, f := range []struct{ name, v string }{{"run.runId", ev.Run.RunID}, {"job.namespace", ev.Job.Namespace}, {"job.name", ev.Job.Name}, {"producer", ev.Producer}} {
		if err := checkText(f.name, f.v); err != nil {
			return ev, err
		}
	}
	return ev, nil
}

// Time returns the event's time, in UTC, to the millisecond.
func (ev *RunEvent) Time() time.Time { return ev.time }

// Contracts lists the contracts to map through; *contract.Set implements it.
type Contracts interface {
	Pipelines() []string
	For(pipeline string) *contract.Contract
}

// ErrNoContract is returned (wrapped) by Map for a job no contract claims:
// not an invalid event, just not one of ours.
var ErrNoContract = errors.New("no contract maps this job")

// Map maps a run event to handoff events through the first contract whose
// openlineage block claims its job. It returns no events and no error for
// an event that proves nothing (RUNNING, OTHER, no eventType and no
// output statistics).
func Map(ev *RunEvent, contracts Contracts) ([]model.Event, error) {
	for _, p := range contracts.Pipelines() {
		c := contracts.For(p)
		ol := c.OpenLineage
		if ol == nil || (ol.Namespace != "" && ol.Namespace != ev.Job.Namespace) {
			continue
		}
		date, hh, mi, hasDate, ok := ol.Job.Read(ev.Job.Name, c.Pipeline)
		if !ok {
			continue
		}
		return mapFor(ev, c, date, hh, mi, hasDate)
	}
	return nil, fmt.Errorf("job %s/%s: %w", ev.Job.Namespace, ev.Job.Name, ErrNoContract)
}

func mapFor(ev *RunEvent, c *contract.Contract, date model.Date, hh, mi int, hasDate bool) ([]model.Event, error) {
	ol := c.OpenLineage
	if !hasDate {
		t, err := dateTime(ev, ol, c.Location)
		if err != nil {
			return nil, err
		}
		lt := t.In(c.Location)
		date = model.Date{Year: lt.Year(), Month: lt.Month(), Day: lt.Day()}
		hh, mi = lt.Hour(), lt.Minute()
	}
	key, ok := c.BatchAt(date, hh, mi)
	if !ok {
		return nil, &Error{"job.name", fmt.Sprintf("pipeline %s: no batch id derives from %s (give the contract a batch_id template)", c.Pipeline, date)}
	}
	base := model.Event{Spec: model.SpecV1, Time: ev.time, Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: key.BatchID,
		System: ol.System, Component: ev.Job.Namespace + "/" + ev.Job.Name,
		Attrs: map[string]string{"openlineage_run_id": ev.Run.RunID}}
	if ev.Producer != "" {
		base.Attrs["openlineage_producer"] = ev.Producer
	}
	id := func(parts ...string) string {
		return model.DerivedEventID(append([]string{"openlineage", ev.Run.RunID, ev.EventType, ev.EventTime}, parts...)...)
	}
	var out []model.Event
	job := base
	switch ev.EventType {
	case "START":
		job.Type = model.JobStarted
	case "COMPLETE":
		job.Type = model.JobSucceeded
	case "FAIL":
		job.Type, job.Error = model.JobFailed, errorMessage(ev, "FAIL")
	case "ABORT":
		job.Type, job.Error = model.JobFailed, errorMessage(ev, "aborted")
	}
	if job.Type != "" {
		job.ID = id()
		out = append(out, job)
	}
	if ev.EventType == "COMPLETE" || ev.EventType == "" {
		artifact, hasArtifact := c.ArtifactName(key)
		for i, ds := range ev.Outputs {
			st := ds.OutputFacets.OutputStatistics
			if st == nil || !hasArtifact || path.Base(ds.Name) != artifact {
				continue
			}
			field := fmt.Sprintf("outputs[%d].outputFacets.outputStatistics.", i)
			if st.RowCount == nil {
				return nil, &Error{field + "rowCount", "missing: artifact.finalized needs the row count"}
			}
			rows, err := count(field+"rowCount", *st.RowCount)
			if err != nil {
				return nil, err
			}
			if err := checkText(fmt.Sprintf("outputs[%d].name", i), ds.Namespace+ds.Name); err != nil {
				return nil, err
			}
			fin := base
			fin.Attrs = map[string]string{"openlineage_run_id": ev.Run.RunID, "dataset": ds.Namespace + "/" + ds.Name}
			fin.Type, fin.Object, fin.Rows, fin.HasRows = model.ArtifactFinalized, artifact, rows, true
			if st.Size != nil {
				size, err := count(field+"size", *st.Size)
				if err != nil {
					return nil, err
				}
				fin.Bytes, fin.HasBytes = size, true
			}
			fin.ID = id(ds.Namespace, ds.Name)
			out = append(out, fin)
		}
	}
	for i := range out {
		if err := out[i].Validate(); err != nil {
			return nil, fmt.Errorf("openlineage: mapped %s does not validate: %w", out[i].Type, err)
		}
	}
	return out, nil
}

// dateTime returns the time the contract takes the business date from.
func dateTime(ev *RunEvent, ol *contract.OpenLineage, loc *time.Location) (time.Time, error) {
	switch ol.Date {
	case contract.DateEventTime:
		return ev.time, nil
	case contract.DateNominalStart, contract.DateNominalEnd:
		raw, ok := ev.Run.Facets["nominalTime"]
		if !ok {
			return time.Time{}, &Error{"run.facets.nominalTime", "missing: the contract takes the business date from the nominal time"}
		}
		var nt struct {
			Start string `json:"nominalStartTime"`
			End   string `json:"nominalEndTime"`
		}
		if err := json.Unmarshal(raw, &nt); err != nil {
			return time.Time{}, &Error{"run.facets.nominalTime", "invalid: " + err.Error()}
		}
		field, v := "nominalStartTime", nt.Start
		if ol.Date == contract.DateNominalEnd {
			field, v = "nominalEndTime", nt.End
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, &Error{"run.facets.nominalTime." + field, strconv.Quote(v) + ": want RFC 3339"}
		}
		return t, nil
	}
	name, field, _ := strings.Cut(ol.Facet, ".")
	raw, ok := ev.Run.Facets[name]
	if !ok {
		return time.Time{}, &Error{"run.facets." + name, "missing: the contract takes the business date from " + ol.Facet}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return time.Time{}, &Error{"run.facets." + name, "invalid: " + err.Error()}
	}
	v, _ := m[field].(string)
	if d, err := model.ParseDate(v); err == nil {
		return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc), nil // a date is the business date as it is
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, &Error{"run.facets." + ol.Facet, strconv.Quote(v) + ": want YYYY-MM-DD or RFC 3339"}
	}
	return t, nil
}

func errorMessage(ev *RunEvent, def string) string {
	raw, ok := ev.Run.Facets["errorMessage"]
	if !ok {
		return def
	}
	var em struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &em) != nil || em.Message == "" {
		return def
	}
	return em.Message
}

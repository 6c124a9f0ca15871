package openlineage_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/model/openlineage"
)

const absContract = `pipeline: account-balance-snapshot.daily
schedule: daily
timezone: Asia/Shanghai
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
openlineage:
  namespace: airflow
  job: "build.account-balance-snapshot.daily"
  business_date: nominal_start
`

const glContract = `pipeline: gl-postings.daily
batch_id: "{yyyymmdd}"
artifact: "gl_postings_{batch_id}.parquet"
openlineage:
  job: "gl_postings_{yyyymmdd}.model.finance.gl"
`

func set(t *testing.T) *contract.Set {
	t.Helper()
	a, err := contract.Parse("abs.yaml", []byte(absContract))
	if err != nil {
		t.Fatal(err)
	}
	g, err := contract.Parse("gl.yaml", []byte(glContract))
	if err != nil {
		t.Fatal(err)
	}
	s, err := contract.NewSet(a, g)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type want struct {
	typ     model.EventType
	batch   string
	rows    int64
	bytes   int64
	object  string
	errText string
}

// TestMapSamples maps the samples (written from the OpenLineage 2-0-2 spec,
// as Airflow, Spark and dbt emit them) and checks each handoff event.
func TestMapSamples(t *testing.T) {
	const abs = "account-balance-snapshot.daily/2026-09-30/20260930"
	for _, tt := range []struct {
		file string
		want []want
		at   string // time of the first event
	}{
		{"start.json", []want{{typ: model.JobStarted, batch: abs}}, "2026-09-30T17:00:00.123Z"},
		{"fail.json", []want{{typ: model.JobFailed, batch: abs, errText: "OperationalError: lost connection to the ledger database"}}, "2026-09-30T17:05:00.5Z"},
		{"retry-start.json", []want{{typ: model.JobStarted, batch: abs}}, "2026-09-30T17:10:00Z"},
		{"running.json", nil, ""},
		{"retry-complete.json", []want{{typ: model.JobSucceeded, batch: abs},
			{typ: model.ArtifactFinalized, batch: abs, rows: 120345, bytes: 9876543, object: "account_balance_snapshot_20260930.csv"}}, "2026-09-30T17:14:05.01Z"},
		{"no-eventtype.json", []want{{typ: model.ArtifactFinalized, batch: abs, rows: 120345, bytes: 9876543, object: "account_balance_snapshot_20260930.csv"}}, "2026-09-30T17:14:02.48Z"},
		{"dbt-complete.json", []want{{typ: model.JobSucceeded, batch: "gl-postings.daily/2026-09-30/20260930"}}, "2026-10-01T02:00:00Z"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			ev, err := openlineage.Decode(sample(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := openlineage.Map(&ev, set(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d events, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				e := got[i]
				if e.Type != w.typ || e.Key().String() != w.batch || e.Rows != w.rows || e.Bytes != w.bytes || e.Object != w.object || e.Error != w.errText {
					t.Errorf("event %d: %+v, want %+v", i, e, w)
				}
				if e.Attrs["openlineage_run_id"] != ev.Run.RunID || e.System != model.Producer {
					t.Errorf("event %d: attrs %v, system %s", i, e.Attrs, e.System)
				}
				if err := e.Validate(); err != nil {
					t.Errorf("event %d does not validate: %v", i, err)
				}
			}
			if tt.at != "" && !got[0].Time.Equal(mustTime(tt.at)) {
				t.Errorf("time %s, want %s", got[0].Time.Format(time.RFC3339Nano), tt.at)
			}
			// The same run event mapped again gives the same ids: a
			// redelivered message is one event.
			again, _ := openlineage.Map(&ev, set(t))
			for i := range got {
				if again[i].ID != got[i].ID {
					t.Errorf("event %d: ids %s and %s for one run event", i, got[i].ID, again[i].ID)
				}
			}
		})
	}
}

// TestRetriesMapToOneBatch: a failed run and its retry (a new run id) are
// one batch, with distinct events.
func TestRetriesMapToOneBatch(t *testing.T) {
	ids := map[string]bool{}
	batches := map[string]bool{}
	runs := map[string]bool{}
	for _, f := range []string{"start.json", "fail.json", "retry-start.json", "retry-complete.json"} {
		ev, err := openlineage.Decode(sample(t, f))
		if err != nil {
			t.Fatal(err)
		}
		runs[ev.Run.RunID] = true
		got, err := openlineage.Map(&ev, set(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			batches[e.Key().String()] = true
			if ids[e.ID] {
				t.Fatalf("%s: id %s repeats", f, e.ID)
			}
			ids[e.ID] = true
		}
	}
	if len(runs) != 2 || len(batches) != 1 || len(ids) != 5 {
		t.Fatalf("%d runs, %d batches, %d events; want 2 runs, 1 batch, 5 events", len(runs), len(batches), len(ids))
	}
}

func TestDecodeAndMapErrors(t *testing.T) {
	good := string(sample(t, "retry-start.json"))
	for _, tt := range []struct {
		name, in, field string
	}{
		{"not JSON", "{", "event"},
		{"no eventTime", strings.Replace(good, `"eventTime": "2026-09-30T17:10:00Z",`, "", 1), "eventTime"},
		{"bad eventTime", strings.Replace(good, "2026-09-30T17:10:00Z", "yesterday", 1), "eventTime"},
		{"unknown eventType", strings.Replace(good, `"START"`, `"PAUSED"`, 1), "eventType"},
		{"no runId", strings.Replace(good, `"runId": "01925f3c-1a2b-7c3d-8e4f-000000000002",`, "", 1), "run.runId"},
		{"no job name", strings.Replace(good, `"name": "build.account-balance-snapshot.daily"`, `"name": ""`, 1), "job.name"},
		{"no nominal time", strings.Replace(good, `"facets": {"nominalTime": {"nominalStartTime": "2026-09-30T00:00:00+08:00"}}`, `"facets": {}`, 1), "run.facets.nominalTime"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := openlineage.Decode([]byte(tt.in))
			if err == nil {
				_, err = openlineage.Map(&ev, set(t))
			}
			var oe *openlineage.Error
			if !errors.As(err, &oe) || oe.Field != tt.field {
				t.Fatalf("error %v, want one naming %s", err, tt.field)
			}
		})
	}
	ev, err := openlineage.Decode([]byte(strings.Replace(good, `"namespace": "airflow"`, `"namespace": "other"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openlineage.Map(&ev, set(t)); !errors.Is(err, openlineage.ErrNoContract) {
		t.Fatalf("a job of another namespace: %v, want ErrNoContract", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, n := range []string{"start.json", "retry-complete.json", "no-eventtype.json"} {
		b, _ := os.ReadFile(filepath.Join("testdata", n))
		f.Add(b)
	}
	a, _ := contract.Parse("abs.yaml", []byte(absContract))
	s, _ := contract.NewSet(a)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := openlineage.Decode(data)
		if err != nil {
			return
		}
		out, err := openlineage.Map(&ev, s)
		if err != nil {
			return
		}
		for _, e := range out {
			if err := e.Validate(); err != nil {
				t.Fatalf("mapped event does not validate: %v", err)
			}
			if _, err := json.Marshal(e); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestDecodeHostile: the hostile inputs a run event may hold, each refused
// naming its field and the reason (a duplicate key used to pass, year 1
// was "required field is missing", 1e30 rows "invalid JSON", a NUL in the
// run id reached the attrs).
func TestDecodeHostile(t *testing.T) {
	const ok = `{"eventType":"COMPLETE","eventTime":"2026-10-01T02:00:00Z","run":{"runId":"r1"},"job":{"namespace":"dbt","name":"gl_postings_20260930.model.finance.gl"},` +
		`"outputs":[{"namespace":"s3://b","name":"gl/gl_postings_20260930.parquet","outputFacets":{"outputStatistics":{"rowCount":120,"size":4096}}}]}`
	if ev, err := openlineage.Decode([]byte(ok)); err != nil {
		t.Fatalf("the valid event: %v", err)
	} else if out, err := openlineage.Map(&ev, set(t)); err != nil || len(out) != 2 || out[1].Rows != 120 {
		t.Fatalf("the valid event maps to %+v, %v", out, err)
	}
	for _, tt := range []struct {
		name, from, to, field, reason string
	}{
		{"duplicate top-level key", `"eventType":"COMPLETE",`, `"eventType":"COMPLETE","eventType":"FAIL",`, "eventType", "duplicate key"},
		{"duplicate nested key", `"runId":"r1"`, `"runId":"r1","runId":"r2"`, "run.runId", "duplicate key"},
		{"year 1", `2026-10-01T02:00:00Z`, `0001-01-01T00:00:00Z`, "eventTime", "outside 1970-01-01..2105-12-31"},
		{"year 9999", `2026-10-01T02:00:00Z`, `9999-12-31T23:59:59Z`, "eventTime", "outside"},
		{"rowCount 1e30", `"rowCount":120`, `"rowCount":1e30`, "rowCount", "want a whole number"},
		{"rowCount negative", `"rowCount":120`, `"rowCount":-1`, "rowCount", "want a whole number"},
		{"rowCount fraction", `"rowCount":120`, `"rowCount":1.5`, "rowCount", "want a whole number"},
		{"size 1e30", `"size":4096`, `"size":1e30`, "size", "want a whole number"},
		{"NUL in runId", `"runId":"r1"`, `"runId":"r\u00001"`, "run.runId", "control character"},
		{"ESC in job name", `"name":"gl_postings`, `"name":"\u001b[2Jgl_postings`, "job.name", "control character"},
		{"C1 in producer", `"eventType"`, `"producer":"x\u009b","eventType"`, "producer", "control character"},
	} {
		in := strings.Replace(ok, tt.from, tt.to, 1)
		if in == ok {
			t.Fatalf("%s: the replacement did not apply", tt.name)
		}
		ev, err := openlineage.Decode([]byte(in))
		if err == nil {
			_, err = openlineage.Map(&ev, set(t))
		}
		var oe *openlineage.Error
		if !errors.As(err, &oe) || !strings.Contains(oe.Field, tt.field) || !strings.Contains(oe.Reason, tt.reason) {
			t.Errorf("%s: %v; want an error on %s saying %q", tt.name, err, tt.field, tt.reason)
		}
	}
	// 1e3 is a whole number written in JSON's exponent form: accepted.
	ev, err := openlineage.Decode([]byte(strings.Replace(ok, `"rowCount":120`, `"rowCount":1e3`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := openlineage.Map(&ev, set(t)); err != nil || out[1].Rows != 1000 {
		t.Errorf("rowCount 1e3: %+v, %v", out, err)
	}
}

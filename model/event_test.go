package model_test

import (
	"errors"
	"testing"

	"github.com/handoff-dev/handoff/model"
)

func TestBatchKeyString(t *testing.T) {
	k := model.BatchKey{Pipeline: "account-balance-snapshot.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	const want = "account-balance-snapshot.daily/2026-09-30/20260930"
	if got := k.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	back, err := model.ParseBatchKey(want)
	if err != nil || back != k {
		t.Errorf("ParseBatchKey(%q) = %+v, %v; want %+v", want, back, err, k)
	}
}

const dateRange = "outside 1970-01-02..2105-12-31, the dates ClickHouse stores (1970-01-01 marks heartbeats)"

func TestParseBatchKeyErrors(t *testing.T) {
	tests := []struct {
		in    string
		field string
		err   string
	}{
		{"p/2026-09-30", "batch", `batch "p/2026-09-30": want pipeline/business_date/batch_id`},
		{"p/2026-09-30/b/c", "batch", `batch "p/2026-09-30/b/c": want pipeline/business_date/batch_id`},
		{"/2026-09-30/b", "pipeline", `pipeline: required field is missing`},
		{"p/2026-13-01/b", "business_date", `business_date "2026-13-01": month out of range`},
		{"p/2026-09-30/", "batch_id", `batch_id: required field is missing`},
		{"p q/2026-09-30/b", "pipeline", `pipeline "p q": must not contain '/', spaces or control characters`},
		// Dates ParseDate reads but business_date cannot store: the codec's
		// bounds and wording (see the check below the table).
		{"p/1970-01-01/b", "business_date", `business_date "1970-01-01": ` + dateRange},
		{"p/1969-12-31/b", "business_date", `business_date "1969-12-31": ` + dateRange},
		{"p/2106-01-01/b", "business_date", `business_date "2106-01-01": ` + dateRange},
		{"p/9999-12-31/b", "business_date", `business_date "9999-12-31": ` + dateRange},
		{"p/0001-01-01/b", "business_date", `business_date "0001-01-01": ` + dateRange},
	}
	for _, tt := range tests {
		_, err := model.ParseBatchKey(tt.in)
		var ve *model.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("ParseBatchKey(%q): got %v, want a *ValidationError", tt.in, err)
			continue
		}
		if ve.Field != tt.field || err.Error() != tt.err {
			t.Errorf("ParseBatchKey(%q): field %q error %q; want %q %q", tt.in, ve.Field, err, tt.field, tt.err)
		}
	}
	// The bounds themselves are accepted, and the codec says the same of
	// a date just outside them as ParseBatchKey.
	for _, ok := range []string{"p/1970-01-02/b", "p/2105-12-31/b"} {
		if _, err := model.ParseBatchKey(ok); err != nil {
			t.Errorf("ParseBatchKey(%q): %v, want accepted (a bound of the storable range)", ok, err)
		}
	}
	_, codecErr := model.Decode([]byte(`{"spec":"handoff/v1","event_id":"e1","type":"job.started","time":"2026-10-01T00:00:00Z",` +
		`"pipeline":"p","business_date":"2106-01-01","batch_id":"b","system":"producer"}`))
	_, keyErr := model.ParseBatchKey("p/2106-01-01/b")
	if codecErr == nil || keyErr == nil || codecErr.Error() != keyErr.Error() {
		t.Errorf("business_date 2106-01-01: codec says %v, ParseBatchKey %v; want the same rejection", codecErr, keyErr)
	}
}

func TestBatchKeyCompare(t *testing.T) {
	key := func(p, d, id string) model.BatchKey {
		return model.BatchKey{Pipeline: p, BusinessDate: model.MustParseDate(d), BatchID: id}
	}
	tests := []struct {
		a, b model.BatchKey
		want int
	}{
		{key("p", "2026-09-30", "1"), key("p", "2026-09-30", "1"), 0},
		{key("a", "2026-12-31", "9"), key("b", "2026-01-01", "1"), -1},
		{key("p", "2026-09-29", "9"), key("p", "2026-09-30", "1"), -1},
		{key("p", "2026-09-30", "2"), key("p", "2026-09-30", "10"), 1}, // batch ids compare as text
		{key("p", "2026-10-01", "1"), key("p", "2026-09-30", "1"), 1},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := tt.b.Compare(tt.a); got != -tt.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
	if !(model.BatchKey{}).IsZero() || key("p", "2026-09-30", "1").IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestEventKeys(t *testing.T) {
	tests := []struct {
		name      string
		e         model.Event
		key       model.BatchKey
		partition string
	}{
		{"batch event", base(),
			model.BatchKey{Pipeline: "p.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"},
			"p.daily/2026-09-30/20260930"},
		{"heartbeat", with(func(e *model.Event) {
			e.Type, e.Component = model.ProcessHeartbeat, "consumer-1"
		}), model.BatchKey{}, "p.daily/consumer-1"},
	}
	for _, tt := range tests {
		if got := tt.e.Key(); got != tt.key {
			t.Errorf("%s: Key() = %+v, want %+v", tt.name, got, tt.key)
		}
		if got := tt.e.PartitionKey(); got != tt.partition {
			t.Errorf("%s: PartitionKey() = %q, want %q", tt.name, got, tt.partition)
		}
	}
	e := base()
	if got, want := e.TimeMillis(), int64(1790817605120); got != want {
		t.Errorf("TimeMillis() = %d, want %d", got, want)
	}
}

func TestEventTypes(t *testing.T) {
	tests := []struct {
		t                                    model.EventType
		proves                               model.Boundary
		batch, object, rows, failure, signal bool
	}{
		{model.JobStarted, model.NoBoundary, true, false, false, false, false},
		{model.JobSucceeded, model.Produced, true, false, false, false, false},
		{model.JobFailed, model.NoBoundary, true, false, false, true, false},
		{model.ArtifactStaged, model.NoBoundary, true, true, false, false, false},
		{model.ArtifactFinalized, model.Finalized, true, true, true, false, false},
		{model.ArtifactTransferred, model.Transferred, true, true, false, false, false},
		{model.SignalPublished, model.Signaled, true, true, false, false, true},
		{model.SignalTransferred, model.SignalDelivered, true, true, false, false, true},
		{model.SignalRestored, model.SignalDelivered, true, true, false, false, true},
		{model.BatchIdentified, model.Identified, true, false, false, false, false},
		{model.ConsumeStarted, model.NoBoundary, true, false, false, false, false},
		{model.ConsumeSucceeded, model.Consumed, true, false, true, false, false},
		{model.ConsumeFailed, model.NoBoundary, true, false, false, true, false},
		{model.ProcessHeartbeat, model.NoBoundary, false, false, false, false, false},
	}
	if len(tests) != len(model.EventTypes) {
		t.Errorf("EventTypes has %d types, the table %d", len(model.EventTypes), len(tests))
	}
	for _, tt := range tests {
		if !tt.t.Known() {
			t.Errorf("%s.Known() = false", tt.t)
		}
		if got := tt.t.Proves(); got != tt.proves {
			t.Errorf("%s.Proves() = %s, want %s", tt.t, got, tt.proves)
		}
		if tt.t.HasBatch() != tt.batch || tt.t.NeedsObject() != tt.object || tt.t.NeedsRows() != tt.rows ||
			tt.t.IsFailure() != tt.failure || tt.t.IsSignal() != tt.signal {
			t.Errorf("%s: predicates wrong", tt.t)
		}
		if tt.t.IsArtifact() != (tt.object && !tt.signal) {
			t.Errorf("%s.IsArtifact() = %v", tt.t, tt.t.IsArtifact())
		}
	}
	if model.EventType("job.exploded").Known() || model.System("warehouse").Known() {
		t.Error("unknown type or system reported as known")
	}
}

func TestValidateBuiltEvent(t *testing.T) {
	e := base()
	if err := e.Validate(); err != nil {
		t.Fatalf("Validate(base) = %v", err)
	}
	e.ID = string(make([]byte, 257))
	var ve *model.ValidationError
	if err := e.Validate(); !errors.As(err, &ve) || ve.Field != "event_id" || ve.Kind != model.RejectBadValue {
		t.Errorf("Validate with a 257-byte event_id = %v, want a bad event_id", err)
	}
}

// TestEventTypeIndex pins Index to the order of EventTypes, which tables
// indexed by type rely on.
func TestEventTypeIndex(t *testing.T) {
	for i, typ := range model.EventTypes {
		if got := typ.Index(); got != i {
			t.Errorf("%s.Index() = %d, want %d", typ, got, i)
		}
	}
	if got := model.EventType("job.done").Index(); got != -1 {
		t.Errorf("unknown type: Index() = %d, want -1", got)
	}
}

// TestLookupIndex checks LookupIndex against Index,
// for every type and for names one byte off a known one.
func TestLookupIndex(t *testing.T) {
	types := []model.EventType{"job.done", "", "j", "job.failex", "jab.failed", "signal.restorex", "xignal.restored",
		"artifact.finalizeD", "process.heartbeaT", "consume.succeedeD", "batch.identifiex", "artifact.transferreD"}
	types = append(types, model.EventTypes[:]...)
	// Prefixes of the constants share their bytes but not their length.
	for _, et := range model.EventTypes {
		types = append(types, et[:len(et)-1], et[:len(et)/2])
	}
	for _, typ := range types {
		if got, want := typ.LookupIndex(), typ.Index(); got != want {
			t.Errorf("LookupIndex(%q) = %d, want %d", typ, got, want)
		}
	}
}

package judgements_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/judgements"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

// The fixture's pipelines: two share the prefix "finance.".
const (
	balance = "finance.balance.daily"
	ledger  = "finance.ledger.daily"
	audit   = "ops.audit.hourly"
)

// record is one stored record of a finding, named by the test.
type record struct {
	id       string // the test's name of the finding
	pipeline string
	date     string
	kind     detect.Kind
	name     string
	seq      uint32
	state    string
	status   string
	resolved string // RFC 3339, "" while open
}

// records are the fixture, in storage order (not seq order): each
// finding's latest record, by seq, decides its state.
var records = []record{
	// a1: open, its one record stored twice (a redelivery).
	{"a1", balance, "2026-09-30", detect.Overdue, "signal_delivered", 1, "open", "late", ""},
	{"a1", balance, "2026-09-30", detect.Overdue, "signal_delivered", 1, "open", "late", ""},
	// a2: resolved; the resolution stored before the open record.
	{"a2", balance, "2026-09-29", detect.Overdue, "consumed", 2, "resolved", "delivered", "2026-09-30T03:00:00Z"},
	{"a2", balance, "2026-09-29", detect.Overdue, "consumed", 1, "open", "late", ""},
	// b1: opened, resolved, opened again.
	{"b1", ledger, "2026-09-30", detect.Missing, "not_produced", 1, "open", "late", ""},
	{"b1", ledger, "2026-09-30", detect.Missing, "not_produced", 3, "open", "late", ""},
	{"b1", ledger, "2026-09-30", detect.Missing, "not_produced", 2, "resolved", "delivered", "2026-10-01T05:00:00Z"},
	// b2: an anomaly (no deadline) whose status changed while open.
	{"b2", ledger, "2026-10-01", "row_mismatch", "", 1, "open", "late", ""},
	{"b2", ledger, "2026-10-01", "row_mismatch", "", 2, "open", "broken", ""},
	// c1: failed.
	{"c1", audit, "2026-10-02", detect.Failed, "consumed", 1, "open", "failed", ""},
}

// ms parses an RFC 3339 time to Unix milliseconds, 0 for "".
func ms(t *testing.T, s string) int64 {
	t.Helper()
	if s == "" {
		return 0
	}
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UnixMilli()
}

// key returns the batch of r.
func (r record) key() model.BatchKey {
	d := model.MustParseDate(r.date)
	return model.BatchKey{Pipeline: r.pipeline, BusinessDate: d, BatchID: d.Compact()}
}

// fingerprints maps the test's names to the findings' fingerprints.
func fingerprints() map[string]string {
	out := map[string]string{}
	for _, r := range records {
		out[r.id] = detect.Fingerprint(r.key(), r.kind, r.name)
	}
	return out
}

// row is r as ingest stores it: raised an hour (ledger: an hour and a
// half) past a deadline at 22:00 of the business date, lateness as of the
// record.
func (r record) row(t *testing.T) schema.FindingRow {
	k := r.key()
	deadline := ms(t, r.date+"T22:00:00Z")
	if r.kind == "row_mismatch" {
		deadline = 0
	}
	raised := ms(t, r.date+"T23:00:00Z")
	if r.pipeline == ledger {
		raised += 30 * 60_000 // after balance's of the same day: no tie in ByRaised
	}
	return schema.FindingRow{Key: k, Fingerprint: detect.Fingerprint(k, r.kind, r.name), Seq: r.seq, State: r.state,
		Kind: string(r.kind), Name: r.name, RaisedMS: raised, ResolvedMS: ms(t, r.resolved), DeadlineMS: deadline,
		LatenessMS: int64(r.seq) * 3_600_000, Severity: "warning", Owner: "team-" + r.pipeline[:3], EvidenceAsOfMS: raised + int64(r.seq),
		Status: r.status, Verdict: "not_identified", FirstMissing: r.name, Diagnosis: "{}"}
}

// load stores the records into a fresh database through ingest's schema
// and sink, the whole set twice (two INSERTs: two parts that merges may
// or may not have collapsed when the test reads), and returns the
// database.
func load(t *testing.T) *storetest.DB {
	t.Helper()
	d := storetest.NewDB(t, "findings_test")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows := fixtureRows(t)
	for range 2 {
		if err := d.Sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// fixtureRows is the records as findings_v2 columns.
func fixtureRows(t *testing.T) *schema.FindingRows {
	rows := &schema.FindingRows{}
	for i, r := range records {
		rows.Add(r.row(t), schema.Source{Topic: "handoff.findings", Partition: 0, Offset: int64(i)}, 1)
	}
	return rows
}

// ids returns the test's names of fs, in order.
func ids(fs []detect.Finding) []string {
	byFP := map[string]string{}
	for id, fp := range fingerprints() {
		byFP[fp] = id
	}
	out := []string{}
	for _, f := range fs {
		out = append(out, byFP[f.Fingerprint])
	}
	return out
}

// readCase is one read of the fixture and the findings it must give,
// by the test's names, in order.
type readCase struct {
	name  string
	f     judgements.Filter
	order judgements.Order
	limit int
	want  []string // nil: the open ones, in any order (Unordered)
	trunc bool
}

var readCases = func() []readCase {
	d := model.MustParseDate
	return []readCase{
		{"all, by batch", judgements.Filter{}, judgements.ByBatch, 100, []string{"a2", "a1", "b1", "b2", "c1"}, false},
		{"open", judgements.Filter{State: judgements.StateOpen}, judgements.ByBatch, 100, []string{"a1", "b1", "b2", "c1"}, false},
		{"resolved", judgements.Filter{State: judgements.StateResolved}, judgements.ByBatch, 100, []string{"a2"}, false},
		{"one pipeline", judgements.Filter{Pipelines: []string{balance}}, judgements.ByBatch, 100, []string{"a2", "a1"}, false},
		{"two pipelines", judgements.Filter{Pipelines: []string{audit, balance}}, judgements.ByBatch, 100, []string{"a2", "a1", "c1"}, false},
		{"prefix", judgements.Filter{Prefixes: []string{"finance."}}, judgements.ByBatch, 100, []string{"a2", "a1", "b1", "b2"}, false},
		{"pipeline or prefix", judgements.Filter{Pipelines: []string{audit}, Prefixes: []string{"finance.led"}}, judgements.ByBatch, 100, []string{"b1", "b2", "c1"}, false},
		{"no such pipeline", judgements.Filter{Pipelines: []string{"finance"}}, judgements.ByBatch, 100, []string{}, false},
		{"quoted pipeline is bound", judgements.Filter{Pipelines: []string{`x'--`}, Prefixes: []string{`'`}}, judgements.ByBatch, 100, []string{}, false},
		{"dates", judgements.Filter{From: d("2026-09-30"), To: d("2026-10-01")}, judgements.ByBatch, 100, []string{"a1", "b1", "b2"}, false},
		{"from only", judgements.Filter{From: d("2026-10-01")}, judgements.ByBatch, 100, []string{"b2", "c1"}, false},
		{"to only", judgements.Filter{To: d("2026-09-29")}, judgements.ByBatch, 100, []string{"a2"}, false},
		{"kind", judgements.Filter{Kinds: []string{"overdue"}}, judgements.ByBatch, 100, []string{"a2", "a1"}, false},
		{"kinds", judgements.Filter{Kinds: []string{"failed", "missing"}}, judgements.ByBatch, 100, []string{"b1", "c1"}, false},
		{"open overdue", judgements.Filter{State: judgements.StateOpen, Kinds: []string{"overdue"}}, judgements.ByBatch, 100, []string{"a1"}, false},
		{"by raised: open first, oldest first", judgements.Filter{}, judgements.ByRaised, 100, []string{"a1", "b1", "b2", "c1", "a2"}, false},
		{"limit cuts", judgements.Filter{}, judgements.ByBatch, 2, []string{"a2", "a1"}, true},
		{"limit exactly met", judgements.Filter{}, judgements.ByBatch, 5, []string{"a2", "a1", "b1", "b2", "c1"}, false},
		{"no limit", judgements.Filter{State: judgements.StateOpen}, judgements.Unordered, 0, nil, false},
	}
}()

// check compares what a read gave (by the test's names) with c.
func (c readCase) check(t *testing.T, got []string, truncated bool) {
	t.Helper()
	want := c.want
	if want == nil {
		got = slices.Sorted(slices.Values(got))
		want = []string{"a1", "b1", "b2", "c1"}
	}
	if !slices.Equal(got, want) || truncated != c.trunc {
		t.Errorf("%s: got %v truncated=%t, want %v truncated=%t", c.name, got, truncated, want, c.trunc)
	}
}

// TestRead checks the selection on the 18.16 server: the latest record
// by seq decides the state whatever the storage order, a record stored
// several times is one finding, every filter, both orders, and the limit.
func TestRead(t *testing.T) {
	d := load(t)
	conn, db := d.Conn, d.Name
	for _, c := range readCases {
		res, err := judgements.Read(context.Background(), conn, db, c.f, c.order, c.limit)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		c.check(t, ids(res.Findings), res.Truncated)
	}
}

// TestReadCurrentClickHouse runs the same reads on a current ClickHouse
// (chdb-core), over the same rows stored twice.
func TestReadCurrentClickHouse(t *testing.T) {
	const db = "handoff_chdb"
	stmts, err := schema.Statements(db)
	if err != nil {
		t.Fatal(err)
	}
	rows := fixtureRows(t)
	for range 2 {
		stmts = append(stmts, testenv.InsertSQL(db, schema.Findings, schema.FindingColumns, rows.Columns()))
	}
	var queries []testenv.CHDBQuery
	for _, c := range readCases {
		limit := c.limit
		if limit > 0 {
			limit++ // as Read asks, to see whether more match
		}
		q, err := judgements.Select(db, c.f, c.order, limit)
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, testenv.CHDBQuery{Name: c.name, SQL: testenv.BindLiterals(q.SQL, q.Args)})
	}
	byFP := map[string]string{}
	for id, fp := range fingerprints() {
		byFP[fp] = id
	}
	for i, r := range testenv.RunCHDB(t, stmts, queries) {
		c := readCases[i]
		if r.Error != "" {
			t.Errorf("%s on chdb: %s", c.name, r.Error)
			continue
		}
		got := []string{}
		for _, row := range r.Rows {
			got = append(got, byFP[row[0]])
		}
		truncated := c.limit > 0 && len(got) > c.limit
		if truncated {
			got = got[:c.limit]
		}
		c.check(t, got, truncated)
	}
}

// TestLatestRecord checks every field of findings read back: each is its
// latest record's (highest seq), times in UTC.
func TestLatestRecord(t *testing.T) {
	d := load(t)
	res, err := judgements.Read(context.Background(), d.Conn, d.Name, judgements.Filter{}, judgements.ByBatch, 10)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]detect.Finding{}
	for i, id := range ids(res.Findings) {
		byID[id] = res.Findings[i]
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	key := model.BatchKey{Pipeline: balance, BusinessDate: model.MustParseDate("2026-09-29"), BatchID: "20260929"}
	want := detect.Finding{Fingerprint: fingerprints()["a2"], Batch: key, State: "resolved", Kind: "overdue", Name: "consumed", Seq: 2,
		RaisedAt: at("2026-09-29T23:00:00Z"), ResolvedAt: at("2026-09-30T03:00:00Z"), Deadline: at("2026-09-29T22:00:00Z"),
		Lateness: 2 * time.Hour, EvidenceAsOf: at("2026-09-29T23:00:00Z").Add(2 * time.Millisecond), Severity: "warning", Owner: "team-fin",
		Status: "delivered", Verdict: "not_identified",
		// Not blocked: the finding is its own batch's incident.
		Root: detect.RootFingerprint(key), RootBatch: key.String(),
		// Read without the diagnosis: of it, what the table copies out.
		Diagnosis: replay.Diagnosis{Batch: key.String(), Pipeline: balance, BusinessDate: "2026-09-29", BatchID: "20260929",
			Status: "delivered", Verdict: model.NotIdentified, FirstMissing: "consumed"}}
	if got := byID["a2"]; !reflect.DeepEqual(got, want) {
		t.Errorf("a2:\n got %+v\nwant %+v", got, want)
	}
	// Reopened: the third record's, with no resolution time.
	if b1 := byID["b1"]; b1.Seq != 3 || b1.State != "open" || !b1.ResolvedAt.IsZero() || b1.Status != "late" {
		t.Errorf("b1 reopened: got seq %d state %s resolved %v status %s; want seq 3, open, none, late", b1.Seq, b1.State, b1.ResolvedAt, b1.Status)
	}
	// An anomaly: no deadline; the status of its second record.
	if b2 := byID["b2"]; !b2.Deadline.IsZero() || b2.Status != "broken" || b2.Lateness != 2*time.Hour {
		t.Errorf("b2: deadline %v status %s lateness %v; want none, broken, its recorded 2h", b2.Deadline, b2.Status, b2.Lateness)
	}
	// Open with a deadline: its deadline, and the lateness recorded as of
	// its evidence (query/findings.Late counts on from the deadline).
	if a1 := byID["a1"]; a1.Deadline.IsZero() || a1.State != detect.Open {
		t.Errorf("a1: deadline %v state %s; want a deadline, open", a1.Deadline, a1.State)
	}
}

// TestCheck: user input the filter refuses, named by field.
func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		f     judgements.Filter
		field string
		says  string
	}{
		{judgements.Filter{Pipelines: []string{"a b"}}, "pipeline", "spaces"},
		{judgements.Filter{Pipelines: []string{""}}, "pipeline", "missing"},
		{judgements.Filter{Prefixes: []string{"x/"}}, "pipeline", "'/'"},
		{judgements.Filter{State: "open' OR 1=1"}, "state", "want open or resolved"},
		{judgements.Filter{Kinds: []string{"overdue", "late"}}, "kind", "not a finding kind"},
		{judgements.Filter{From: model.MustParseDate("2026-10-02"), To: model.MustParseDate("2026-10-01")}, "from", "after"},
	} {
		err := tt.f.Check()
		fe, ok := err.(*judgements.FieldError)
		if !ok || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.says) {
			t.Errorf("Check(%+v) = %v; want a %s error saying %q", tt.f, err, tt.field, tt.says)
		}
	}
	ok := judgements.Filter{Pipelines: []string{balance}, Prefixes: []string{"finance."}, State: "open", Kinds: judgements.Kinds(),
		From: model.MustParseDate("2026-10-01"), To: model.MustParseDate("2026-10-01")}
	if err := ok.Check(); err != nil {
		t.Errorf("Check(%+v) = %v, want nil", ok, err)
	}
}

// TestSelectRefuses: what Select refuses before anything is sent.
func TestSelectRefuses(t *testing.T) {
	for _, tt := range []struct {
		db    string
		order judgements.Order
		limit int
	}{
		{"handoff.findings_v2 FINAL --", judgements.ByBatch, 1},
		{"handoff", judgements.Order(99), 1},
		{"handoff", judgements.ByBatch, -1},
	} {
		if q, err := judgements.Select(tt.db, judgements.Filter{}, tt.order, tt.limit); err == nil {
			t.Errorf("Select(%q, %d, %d) = %q, want an error", tt.db, tt.order, tt.limit, q.SQL)
		}
	}
}

// TestLifecycleRoundTrip: findings as the detector publishes them, with
// the fields of how they ended (a first attempt superseded by its re-run,
// a boundary on time but reported late, one still open), go to their rows
// (schema.FindingRowOf), are stored by ingest's sink on the 18.16 server,
// and read back (Read, the listings' and the restore's read) equal, the
// diagnosis reduced to what the table copies out of it.
func TestLifecycleRoundTrip(t *testing.T) {
	d := storetest.NewDB(t, "findings_lifecycle")
	conn, db := d.Conn, d.Name
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	date := model.MustParseDate("2026-09-19")
	first := model.BatchKey{Pipeline: ledger, BusinessDate: date, BatchID: "20260919"}
	rerun := model.BatchKey{Pipeline: ledger, BusinessDate: date, BatchID: "20260919-r2"}
	onTime := model.BatchKey{Pipeline: balance, BusinessDate: date, BatchID: "20260919"}
	summary := func(k model.BatchKey, status replay.Status, v model.Hypothesis, fm string) replay.Diagnosis {
		return replay.Diagnosis{Batch: k.String(), Pipeline: k.Pipeline, BusinessDate: k.BusinessDate.String(), BatchID: k.BatchID,
			Status: status, Verdict: v, FirstMissing: fm}
	}
	in := []detect.Finding{
		{Fingerprint: detect.Fingerprint(first, detect.Failed, "produced"), State: detect.Resolved, Kind: detect.Failed, Name: "produced",
			Batch: first, Status: "failed", Verdict: "not_produced", Seq: 2,
			RaisedAt: at("2026-09-20T02:10:00Z"), ResolvedAt: at("2026-09-20T05:40:00Z"), EvidenceAsOf: at("2026-09-20T05:40:00Z"),
			Resolution: "superseded by " + rerun.String(), SupersededBy: rerun.String(), Severity: "critical", Owner: "ledger-team",
			Diagnosis: summary(first, "failed", model.NotProduced, "produced")},
		{Fingerprint: detect.Fingerprint(onTime, detect.Overdue, "signal_delivered"), State: detect.Resolved, Kind: detect.Overdue,
			Name: "signal_delivered", Batch: onTime, Status: "delivered", Verdict: "delivered", Seq: 2,
			RaisedAt: at("2026-09-20T06:00:30Z"), ResolvedAt: at("2026-09-20T06:02:00Z"), Deadline: at("2026-09-20T06:00:00Z"),
			ReportingDelay: 3 * time.Minute, EvidenceAsOf: at("2026-09-20T06:02:00Z"),
			Resolution: "on time (signal_delivered at 2026-09-20T05:59:00Z, deadline 2026-09-20T06:00:00Z), reported late by 3m",
			Severity:   "warning", Diagnosis: summary(onTime, "delivered", model.Delivered, "")},
		{Fingerprint: detect.Fingerprint(rerun, detect.Overdue, "consumed"), State: detect.Open, Kind: detect.Overdue, Name: "consumed",
			Batch: rerun, Status: "late", Verdict: "not_consumed", Seq: 1, RaisedAt: at("2026-09-20T07:00:00Z"),
			Deadline: at("2026-09-20T07:00:00Z"), Lateness: time.Minute, EvidenceAsOf: at("2026-09-20T07:01:00Z"),
			Severity: "warning", Diagnosis: summary(rerun, "late", model.NotConsumed, "consumed")},
	}
	rows := &schema.FindingRows{}
	for i := range in {
		// Each its own incident, as the detector writes a finding nothing
		// upstream blocks.
		in[i].Root, in[i].RootBatch = detect.RootFingerprint(in[i].Batch), in[i].Batch.String()
		rows.Add(schema.FindingRowOf(&in[i]), schema.Source{Topic: "handoff.findings", Offset: int64(i)}, 1)
	}
	if err := d.Sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns()); err != nil {
		t.Fatal(err)
	}
	res, err := judgements.Read(ctx, conn, db, judgements.Filter{}, judgements.Unordered, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]detect.Finding{}
	for _, f := range res.Findings {
		got[f.Fingerprint] = f
	}
	if len(got) != len(in) {
		t.Fatalf("read %d findings, want %d", len(got), len(in))
	}
	for _, want := range in {
		if g := got[want.Fingerprint]; !reflect.DeepEqual(g, want) {
			t.Errorf("%s %s: read back\n got %+v\nwant %+v", want.Batch, want.Kind, g, want)
		}
	}
}

// TestSelectNames: for every filter, SelectNames gives the batch and name
// of each finding Select gives in order ByRaised, in the same order, on
// the 18.16 server and on a current ClickHouse (chdb-core).
func TestSelectNames(t *testing.T) {
	d := load(t)
	conn, db := d.Conn, d.Name
	ctx := context.Background()
	const chdbDB = "handoff_chdb"
	stmts, err := schema.Statements(chdbDB)
	if err != nil {
		t.Fatal(err)
	}
	rows := fixtureRows(t)
	for range 2 {
		stmts = append(stmts, testenv.InsertSQL(chdbDB, schema.Findings, schema.FindingColumns, rows.Columns()))
	}
	var (
		queries []testenv.CHDBQuery
		wants   [][]string
	)
	for _, c := range readCases {
		res, err := judgements.Read(ctx, conn, db, c.f, judgements.ByRaised, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := []string{}
		for _, f := range res.Findings {
			want = append(want, f.Batch.String()+" "+f.Name)
		}
		wants = append(wants, want)
		q, err := judgements.SelectNames(db, c.f)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		r, err := conn.Query(ctx, q.SQL, q.Args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for r.Next() {
			k, name, err := judgements.ScanName(r)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, k.String()+" "+name)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if !slices.Equal(got, want) {
			t.Errorf("%s: SelectNames gives %q, Select by raised %q", c.name, got, want)
		}
		if c.name == "open" && len(want) != 4 {
			t.Errorf("open: %d findings, want 4: the fixture changed", len(want))
		}
		cq, err := judgements.SelectNames(chdbDB, c.f)
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, testenv.CHDBQuery{Name: c.name, SQL: testenv.BindLiterals(cq.SQL, cq.Args)})
	}
	for i, r := range testenv.RunCHDB(t, stmts, queries) {
		if r.Error != "" {
			t.Errorf("%s on chdb: %s", readCases[i].name, r.Error)
			continue
		}
		got := []string{}
		for _, row := range r.Rows {
			d := model.MustParseDate(row[2])
			got = append(got, model.BatchKey{Pipeline: row[1], BusinessDate: d, BatchID: row[3]}.String()+" "+row[5])
		}
		if !slices.Equal(got, wants[i]) {
			t.Errorf("%s on chdb: SelectNames gives %q, Select by raised on 18.16 %q", readCases[i].name, got, wants[i])
		}
	}
}

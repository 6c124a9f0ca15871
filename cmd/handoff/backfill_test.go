package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/results"
	"github.com/handoff-dev/handoff/internal/progress"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
)

// backfillContracts writes the contracts of the generated history: the
// seed case's daily contract (deadlines in Asia/Shanghai), a weekdays one
// with a holiday, an hourly one without an exchange hop; a fourth pipeline
// has no contract file.
func backfillContracts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	seed, err := os.ReadFile("../../deploy/contracts/account-balance-snapshot.daily.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"account-balance-snapshot.daily.yaml": string(seed),
		"w.weekdays.yaml": "pipeline: w.weekdays\nschedule: weekdays\nholidays: [2026-09-16]\nbatch_id: \"{yyyymmdd}\"\n" +
			"artifact: \"w_{batch_id}.csv\"\nsignal: \"w_{batch_id}.flag\"\n",
		"h.hourly.yaml": "pipeline: h.hourly\nschedule: hourly\nbatch_id: \"{yyyymmdd}{hh}\"\n" +
			"required: [produced, finalized, signaled, identified, consumed]\ndeadlines:\n  consumed: \"start + 3h\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// genBackfillHistory returns the seed case plus generated batches of four
// pipelines over August and September 2026: every point of the ladder
// where a delivery can stop, failures, batches never produced (continuity
// gaps), re-runs under another batch id, row, checksum and identity
// mismatches, early signals, double consumption, events later than the
// as-of time, redeliveries (the same event twice) and heartbeats.
func genBackfillHistory(t *testing.T) []model.Event {
	r := rand.New(rand.NewPCG(7, 11))
	events := readSeed(t)
	start := model.MustParseDate("2026-08-01")
	ladder := []struct {
		typ model.EventType
		sys model.System
	}{
		{model.JobStarted, model.Producer}, {model.ArtifactStaged, model.Producer}, {model.ArtifactFinalized, model.Producer},
		{model.JobSucceeded, model.Producer}, {model.SignalPublished, model.Producer}, {model.ArtifactTransferred, model.Exchange},
		{model.SignalTransferred, model.Exchange}, {model.BatchIdentified, model.Consumer}, {model.ConsumeStarted, model.Consumer},
		{model.ConsumeSucceeded, model.Consumer},
	}
	type pipe struct {
		name, prefix string
		keys         func(model.Date) []string
	}
	daily := func(d model.Date) []string { return []string{d.Compact()} }
	pipes := []pipe{
		{"account-balance-snapshot.daily", "account_balance_snapshot_", daily},
		{"w.weekdays", "w_", func(d model.Date) []string {
			if wd := d.In(time.UTC).Weekday(); wd == time.Saturday || wd == time.Sunday || d.String() == "2026-09-16" {
				return nil
			}
			return []string{d.Compact()}
		}},
		{"h.hourly", "h_", func(d model.Date) []string {
			var out []string
			for h := range 24 {
				out = append(out, fmt.Sprintf("%s%02d", d.Compact(), h))
			}
			return out
		}},
		{"x.nocontract", "x_", daily},
	}
	for _, p := range pipes {
		for day := range 61 {
			date := start.AddDays(day)
			if p.name == "account-balance-snapshot.daily" && date.Compare(model.MustParseDate("2026-09-29")) >= 0 {
				continue // the seed case's batches
			}
			for _, id := range p.keys(date) {
				if r.IntN(12) == 0 {
					continue // never produced
				}
				if r.IntN(20) == 0 {
					id += "-rerun"
				}
				t0 := date.In(time.UTC).Add(time.Duration(14+r.IntN(8))*time.Hour + time.Duration(r.IntN(3600))*time.Second)
				if p.name == "h.hourly" {
					t0 = date.In(time.UTC).Add(time.Duration(len(id)%24)*time.Hour + time.Duration(r.IntN(1800))*time.Second)
				}
				steps := ladder
				switch x := r.IntN(20); {
				case x < 5: // stops somewhere
					steps = ladder[:r.IntN(len(ladder))]
				case x == 5: // the job failed
					steps = ladder[:1]
				}
				n := 0
				emit := func(typ model.EventType, sys model.System, at time.Time, mut func(*model.Event)) {
					n++
					e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s-%02d", p.name, id, n), Type: typ, Time: at.Truncate(time.Millisecond),
						Pipeline: p.name, BusinessDate: date, BatchID: id, System: sys, Component: string(sys) + "-1"}
					if typ.NeedsObject() {
						e.Object = p.prefix + id + ".csv"
						if strings.HasPrefix(string(typ), "signal.") {
							e.Object = p.prefix + id + ".flag"
						}
					}
					if typ.NeedsRows() || typ == model.SignalPublished {
						e.Rows, e.HasRows = 500, true
					}
					if typ == model.ArtifactFinalized || typ == model.ArtifactTransferred {
						e.Checksum = "sha256:aa"
					}
					if mut != nil {
						mut(&e)
					}
					events = append(events, e)
					if r.IntN(10) == 0 {
						events = append(events, e) // redelivered
					}
				}
				anomaly := r.IntN(25)
				at := t0
				for i, s := range steps {
					at = at.Add(time.Duration(1+r.IntN(300)) * time.Second)
					if r.IntN(30) == 0 {
						at = at.Add(30 * time.Hour) // late, and for a few after the as-of time
					}
					var mut func(*model.Event)
					switch {
					case anomaly == 0 && s.typ == model.ConsumeSucceeded:
						mut = func(e *model.Event) { e.Rows = 499 } // row_mismatch
					case anomaly == 1 && s.typ == model.ArtifactTransferred:
						mut = func(e *model.Event) { e.Checksum = "sha256:bb" } // checksum_mismatch
					case anomaly == 2 && s.typ == model.ArtifactFinalized:
						mut = func(e *model.Event) { e.Object = p.prefix + "19990101.csv" } // identity_mismatch
					case anomaly == 3 && s.typ == model.SignalPublished:
						mut = func(e *model.Event) { e.Time = t0 } // signal_before_final
					}
					emit(s.typ, s.sys, at, mut)
					if len(steps) == 1 && i == 0 && r.IntN(2) == 0 {
						emit(model.JobFailed, model.Producer, at.Add(time.Minute), func(e *model.Event) { e.Error = "exit status 1" })
					}
				}
				if anomaly == 4 && len(steps) == len(ladder) {
					emit(model.ConsumeSucceeded, model.Consumer, at.Add(time.Hour), nil) // duplicate_consumption
				}
			}
		}
		for h := range 40 {
			events = append(events, model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("hb-%s-%d", p.name, h), Type: model.ProcessHeartbeat,
				Time: start.In(time.UTC).Add(time.Duration(h) * 37 * time.Hour), Pipeline: p.name, System: model.Consumer,
				Component: fmt.Sprintf("runner-%d", h%3)})
		}
	}
	r.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	return events
}

func runBackfillCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"backfill"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// inRange keeps the diagnoses (raw JSON) with business dates in [from, to].
func inRange(t *testing.T, raw []json.RawMessage, from, to string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, r := range raw {
		var d struct {
			BusinessDate string `json:"business_date"`
		}
		if err := json.Unmarshal(r, &d); err != nil {
			t.Fatal(err)
		}
		if d.BusinessDate >= from && d.BusinessDate <= to {
			out = append(out, r)
		}
	}
	return out
}

func rawArray(t *testing.T, s string) []json.RawMessage {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		t.Fatalf("not a JSON array: %v\n%.2000s", err, s)
	}
	return raw
}

// wantSummary computes the summary lines a backfill must print for the
// diagnoses ds (from the file): counts per status, per verdict, and the
// top breaks.
func wantSummary(t *testing.T, ds []json.RawMessage) (status, verdict string, breaks []string) {
	t.Helper()
	st, vd, br := map[string]int{}, map[string]int{}, map[string]int{}
	for _, r := range ds {
		var d struct {
			Pipeline, Status, Verdict string
			FirstMissing              string `json:"first_missing"`
		}
		if err := json.Unmarshal(r, &d); err != nil {
			t.Fatal(err)
		}
		st[d.Status]++
		vd[d.Verdict]++
		if d.Status != "delivered" && d.FirstMissing != "" {
			br[d.FirstMissing+"\x00"+d.Pipeline]++
		}
	}
	var parts []string
	for _, s := range []string{"delivered", "in_progress", "late", "failed", "broken"} {
		if st[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", s, progress.Thousands(int64(st[s]))))
		}
	}
	status = "by status: " + strings.Join(parts, ", ")
	parts = nil
	for _, v := range []string{"not_produced", "not_final", "not_transferred", "not_identified", "not_consumed", "delivered"} {
		if vd[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", v, progress.Thousands(int64(vd[v]))))
		}
	}
	verdict = "by verdict: " + strings.Join(parts, ", ")
	type bc struct {
		key string
		n   int
	}
	var bs []bc
	for k, n := range br {
		bs = append(bs, bc{k, n})
	}
	slices.SortFunc(bs, func(a, b bc) int {
		if a.n != b.n {
			return b.n - a.n
		}
		pa, pb := strings.Split(a.key, "\x00"), strings.Split(b.key, "\x00")
		if pa[1] != pb[1] {
			return strings.Compare(pa[1], pb[1])
		}
		return strings.Compare(pa[0], pb[0])
	})
	for _, b := range bs[:min(10, len(bs))] {
		p := strings.Split(b.key, "\x00")
		breaks = append(breaks, fmt.Sprintf("%s %s %s", progress.Thousands(int64(b.n)), p[0], p[1]))
	}
	return status, verdict, breaks
}

// TestBackfillEqualsDiagnose stores a generated history in the real
// ClickHouse (every event twice, as an at-least-once ingester may leave
// it before merges) and checks, for two ranges and a pipeline filter, that
// backfill's diagnoses equal byte for byte, batch for batch and in the
// same order, those of `handoff diagnose` over the same events from a
// file as of the same time; that the summary counts what the file's
// diagnoses say; and that progress, on a standard error that is not a
// terminal, is plain lines ending at 100%.
func TestBackfillEqualsDiagnose(t *testing.T) {
	testenv.Integration(t)
	clearEnv(t)
	t.Setenv("HANDOFF_KAFKA_BROKERS", "")
	contracts := backfillContracts(t)
	events := genBackfillHistory(t)
	file := writeEvents(t, events)
	addr, _, db := storeTwice(t, "handoff_backfill", events)

	code, out, errOut := runCmd(t, "", "--events", file, "--contract", contracts, "--as-of", seedAsOf, "--format", "json")
	if code > exitNotDelivered {
		t.Fatalf("diagnose: exit %d: %s", code, errOut)
	}
	all := rawArray(t, out)

	for _, tt := range []struct {
		name      string
		from, to  string
		pipelines []string
		unitRows  string // small: several units, the hourly pipeline read alone in windows
	}{
		{"September", "2026-09-01", "2026-09-30", nil, ""},
		{"September, small units", "2026-09-01", "2026-09-30", nil, "2000"},
		{"one weekday, after a weekend", "2026-09-14", "2026-09-14", nil, ""},
		{"two pipelines", "2026-08-15", "2026-09-30", []string{"h.hourly", "account-balance-snapshot.daily"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := inRange(t, all, tt.from, tt.to)
			if tt.pipelines != nil {
				m := byPipeline(t, "["+string(bytes.Join(bytesOf(want), []byte(",")))+"]")
				want = nil
				for _, p := range []string{"account-balance-snapshot.daily", "h.hourly"} {
					want = append(want, m[p]...)
				}
			}
			if len(want) < 20 {
				t.Fatalf("only %d diagnoses in range: the generator is too small to test anything", len(want))
			}
			args := []string{"--clickhouse-addr", addr, "--clickhouse-database", db, "--from", tt.from, "--to", tt.to,
				"--contract", contracts, "--as-of", seedAsOf, "--format", "json", "--dry-run", "--workers", "3"}
			for _, p := range tt.pipelines {
				args = append(args, "--pipeline", p)
			}
			if tt.unitRows != "" {
				args = append(args, "--unit-rows", tt.unitRows)
			}
			code, out, errOut := runBackfillCmd(t, args...)
			if code != exitOK {
				t.Fatalf("backfill: exit %d: %s", code, errOut)
			}
			got := rawArray(t, out)
			if len(got) != len(want) {
				t.Fatalf("backfill: %d diagnoses, diagnose over the file: %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("diagnosis %d differs:\nfile:     %s\nbackfill: %s", i, want[i], got[i])
				}
			}

			status, verdict, breaks := wantSummary(t, want)
			for _, line := range []string{status, verdict} {
				if !strings.Contains(errOut, "\n"+line+"\n") {
					t.Errorf("summary lacks %q:\n%s", line, errOut)
				}
			}
			space := regexp.MustCompile(`\s+`)
			_, top, _ := strings.Cut(errOut, "top breaks (batches, first missing boundary, pipeline):\n")
			var gotBreaks []string
			for _, l := range strings.Split(strings.TrimSpace(top), "\n") {
				gotBreaks = append(gotBreaks, space.ReplaceAllString(strings.TrimSpace(l), " "))
			}
			if strings.Join(gotBreaks, "\n") != strings.Join(breaks, "\n") {
				t.Errorf("top breaks:\n%s\nwant\n%s", strings.Join(gotBreaks, "\n"), strings.Join(breaks, "\n"))
			}
			if want := fmt.Sprintf(", %s batches, ", progress.Thousands(int64(len(want)))); !strings.Contains(errOut, want) {
				t.Errorf("summary does not count %d batches:\n%s", len(want), errOut)
			}

			// Progress on a non-terminal: plain lines, no bar or carriage
			// return, the last one complete.
			if strings.Contains(errOut, "\r") || strings.Contains(errOut, "[#") {
				t.Errorf("progress drew a bar on a non-terminal:\n%s", errOut)
			}
			last := regexp.MustCompile(`(?m)^backfill: ([0-9,]+)/([0-9,]+) events \(100%\), ([0-9,]+) batches, [0-9,]+ events/s, done in \d+s$`)
			m := last.FindStringSubmatch(errOut)
			if m == nil || m[1] != m[2] || m[3] != progress.Thousands(int64(len(want))) {
				t.Errorf("no final progress line with %d batches at 100%%:\n%s", len(want), errOut)
			}
		})
	}
}

func bytesOf(raw []json.RawMessage) [][]byte {
	out := make([][]byte, len(raw))
	for i, r := range raw {
		out[i] = r
	}
	return out
}

// TestBackfillPublishesOnce publishes the diagnoses of a range to a real
// Kafka topic, twice with the same as-of time (a re-run), and stores them
// with the results consumer of `handoff ingest`: diagnoses_v2 then holds
// every batch exactly once, with the diagnosis JSON that diagnose over a
// file gives, byte for byte.
func TestBackfillPublishesOnce(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	clearEnv(t)
	contracts := backfillContracts(t)
	events := genBackfillHistory(t)
	file := writeEvents(t, events)
	addr, conn, db := storeTwice(t, "handoff_backfill_pub", events)
	topic := "test." + db + ".diagnoses"
	testenv.Topics(t, brokers, topic)

	const from, to = "2026-09-01", "2026-09-30"
	code, out, errOut := runCmd(t, "", "--events", file, "--contract", contracts, "--as-of", seedAsOf, "--format", "json")
	if code > exitNotDelivered {
		t.Fatalf("diagnose: exit %d: %s", code, errOut)
	}
	want := inRange(t, rawArray(t, out), from, to)

	// A broker that is not there: exit 3 naming it, before anything is read.
	code, out, errOut = runBackfillCmd(t, "--clickhouse-addr", addr, "--clickhouse-database", db, "--from", from, "--to", to,
		"--contract", contracts, "--as-of", seedAsOf, "--kafka-brokers", "127.0.0.1:1", "--diagnoses-topic", topic, "--publish")
	if code != exitFailure || !strings.Contains(errOut, "127.0.0.1:1") || out != "" {
		t.Fatalf("backfill to a missing broker: exit %d, want %d; stderr %q should name the broker; stdout %q", code, exitFailure, errOut, out)
	}

	t.Setenv("HANDOFF_KAFKA_BROKERS", strings.Join(brokers, ","))
	t.Setenv("HANDOFF_DIAGNOSES_TOPIC", topic)
	// Kafka configured by the environment, as the docs have users source
	// it, but no --publish: a look at history, nothing written (the row
	// counts below would have a third copy).
	code, out, errOut = runBackfillCmd(t, "--clickhouse-addr", addr, "--clickhouse-database", db, "--from", from, "--to", to,
		"--contract", contracts, "--as-of", seedAsOf)
	if code != exitOK || strings.Contains(out, "published") {
		t.Fatalf("backfill without --publish: exit %d, summary %q (%s); want exit 0 and nothing published", code, out, errOut)
	}
	for run := range 2 {
		code, out, errOut := runBackfillCmd(t, "--clickhouse-addr", addr, "--clickhouse-database", db, "--from", from, "--to", to,
			"--contract", contracts, "--as-of", seedAsOf, "--publish")
		if code != exitOK {
			t.Fatalf("backfill run %d: exit %d: %s", run+1, code, errOut)
		}
		if w := fmt.Sprintf("%s diagnoses published", progress.Thousands(int64(len(want)))); !strings.Contains(out, w) {
			t.Fatalf("backfill run %d: summary does not say %q:\n%s", run+1, w, out)
		}
	}

	cfg, err := results.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.FindingsTopic, cfg.DiagnosesTopic, cfg.Group = "", topic, db
	cfg.FlushInterval = 200 * time.Millisecond
	cfg.Brokers, cfg.DLQTopic, cfg.Database, cfg.Partitions = brokers, topic+".dlq", db, 3
	cfg.RetryMax, cfg.SessionTimeout, cfg.ShutdownTimeout = time.Second, 6*time.Second, 20*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	c, err := results.New(ctx, cfg, results.Options{Conn: conn})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("results consumer: %v", err)
		}
		c.Close()
	}()

	count := func(q string) uint64 {
		qctx, qcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer qcancel()
		var n uint64
		if err := conn.QueryRow(qctx, strings.ReplaceAll(q, "{db}", db)).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	// Two runs published every diagnosis twice: all stored, then one row
	// per (batch, as_of) once merged.
	testenv.Eventually(t, 2*time.Minute, "diagnoses stored", func() (bool, string) {
		n := count("SELECT count() FROM {db}.diagnoses_v2")
		return n == 2*uint64(len(want)), fmt.Sprintf("%d rows, want %d", n, 2*len(want))
	})
	if n := count("SELECT count() FROM {db}.diagnoses_v2 FINAL"); n != uint64(len(want)) {
		t.Errorf("count() FINAL = %d, want %d: one diagnosis per batch and as-of", n, len(want))
	}
	if n := count("SELECT uniqExact(batch, as_of_ms) FROM {db}.diagnoses_v2"); n != uint64(len(want)) {
		t.Errorf("distinct (batch, as_of) = %d, want %d", n, len(want))
	}
	qctx, qcancel := context.WithTimeout(context.Background(), time.Minute)
	defer qcancel()
	rows, err := conn.Query(qctx, "SELECT batch, any(diagnosis), uniqExact(diagnosis) FROM "+db+".diagnoses_v2 GROUP BY pipeline, business_date, batch_id, batch ORDER BY pipeline, business_date, batch_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var (
			batch, js string
			variants  uint64
		)
		if err := rows.Scan(&batch, &js, &variants); err != nil {
			t.Fatal(err)
		}
		if i >= len(want) {
			t.Fatalf("more batches stored than diagnosed: %s", batch)
		}
		if variants != 1 || js != string(want[i]) {
			t.Fatalf("stored diagnosis %d (%s, %d variants) differs from diagnose's:\nfile:   %s\nstored: %s", i, batch, variants, want[i], js)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(want) {
		t.Fatalf("%d batches stored, want %d", i, len(want))
	}
}

// TestBackfillUsage: every bad flag or value is exit 2 naming the flag,
// before anything is read (no services needed: nothing connects).
func TestBackfillUsage(t *testing.T) {
	clearEnv(t)
	for _, k := range []string{"HANDOFF_KAFKA_BROKERS", "HANDOFF_CLICKHOUSE_ADDR", "HANDOFF_CLICKHOUSE_DATABASE", "HANDOFF_DIAGNOSES_TOPIC"} {
		t.Setenv(k, "")
	}
	ok := []string{"--from", "2026-09-01", "--to", "2026-09-30", "--clickhouse-addr", "127.0.0.1:1"}
	tests := []struct {
		name string
		args []string
		say  string
	}{
		{"no from", []string{"--to", "2026-09-30", "--clickhouse-addr", "x:1"}, "--from DATE is required"},
		{"bad to", []string{"--from", "2026-09-01", "--to", "2026-13-01"}, `--to "2026-13-01"`},
		{"to before from", []string{"--from", "2026-09-02", "--to", "2026-09-01"}, "--to 2026-09-01 is before --from 2026-09-02"},
		{"format", append(slices.Clone(ok), "--format", "yaml"), `--format "yaml"`},
		{"as-of", append(slices.Clone(ok), "--as-of", "yesterday"), `--as-of "yesterday"`},
		{"publish and dry run", append(slices.Clone(ok), "--publish", "--dry-run"), "--publish and --dry-run are exclusive"},
		{"publish without Kafka", append(slices.Clone(ok), "--publish"), "--publish needs Kafka"},
		{"empty topic", append(slices.Clone(ok), "--publish", "--kafka-brokers", "127.0.0.1:1", "--diagnoses-topic", ""), "--diagnoses-topic"},
		{"no ClickHouse", []string{"--from", "2026-09-01", "--to", "2026-09-30", "--clickhouse-addr", " "}, "--clickhouse-addr (HANDOFF_CLICKHOUSE_ADDR): empty"},
		{"database", append(slices.Clone(ok), "--clickhouse-database", "x; DROP"), "--clickhouse-database"},
		{"workers", append(slices.Clone(ok), "--workers", "-1"), "--workers -1"},
		{"unit rows", append(slices.Clone(ok), "--unit-rows", "-5"), "--unit-rows -5"},
		{"empty pipeline", append(slices.Clone(ok), "--pipeline", " "), "--pipeline: empty name"},
		{"contract", append(slices.Clone(ok), "--contract", "/no/such/dir"), "--contract"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runBackfillCmd(t, tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.say) || out != "" {
				t.Fatalf("exit %d, want %d; stderr %q should say %q; stdout %q", code, exitUsage, errOut, tt.say, out)
			}
		})
	}
}

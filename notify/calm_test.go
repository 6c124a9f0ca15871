package notify

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
)

// fakeClock is the clock of a test: Now stands still until Advance, and
// After fires when Advance reaches its time, so holds run out exactly
// when the test says, never by the wall clock.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

// Advance moves the clock on by d and fires every timer due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.c <- c.now
	}
	c.waiters = kept
}

func (c *fakeClock) options(log *slog.Logger) Options {
	return Options{Now: c.Now, After: c.After, Logger: log}
}

// findingAt returns the seed finding moved to batch pipeline/date/id,
// raised at raised (evidence as of then too), with its fingerprint and
// diagnosis following the batch.
func findingAt(t testing.TB, pipeline string, date model.Date, id string, raised time.Time) detect.Finding {
	f := seedFinding(t)
	f.Batch = model.BatchKey{Pipeline: pipeline, BusinessDate: date, BatchID: id}
	f.Fingerprint = detect.Fingerprint(f.Batch, f.Kind, f.Name)
	f.Diagnosis.Batch = f.Batch.String()
	f.RaisedAt, f.EvidenceAsOf, f.Deadline = raised, raised, raised.Add(-15*time.Minute)
	return f
}

// resolution returns f's resolved record (next seq) at at.
func resolution(f detect.Finding, at time.Time) detect.Finding {
	r := f
	r.Seq, r.State, r.Status, r.ResolvedAt, r.EvidenceAsOf = f.Seq+1, detect.Resolved, replay.StatusDelivered, at, at
	return r
}

func records(fs ...detect.Finding) [][]byte {
	out := make([][]byte, len(fs))
	for i := range fs {
		out[i] = fs[i].AppendJSON(nil)
	}
	return out
}

// postedBatches returns the batches of the alerts of pipeline a recording
// Alertmanager received in requests [from:], sorted, without repeats.
func postedBatches(t *testing.T, r *recorder, from int, pipeline string) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, q := range r.accepted()[from:] {
		var as []Alert
		if err := json.Unmarshal(q.body, &as); err != nil {
			t.Fatalf("alerts posted: %v", err)
		}
		for _, a := range as {
			if a.Labels["pipeline"] == pipeline {
				seen[a.Labels["batch"]] = true
			}
		}
	}
	var out []string
	for b := range seen {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}

func amBatches(t *testing.T, am, pipeline string) []string {
	var out []string
	for _, a := range amAlerts(t, am, pipeline) {
		out = append(out, a.Labels["batch"])
	}
	sort.Strings(out)
	return out
}

func waitCommitted(t *testing.T, cfg Config, what string) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, what+" consumed and committed", func() (bool, string) {
		n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic)
		return n == 0, fmt.Sprintf("%d uncommitted", n)
	})
}

// TestFirstStartMonthOfHistory starts notify for the first time over a
// findings topic holding 35 days of history (open findings, and findings
// opened and resolved, raised over 30 days before the clock) and a few
// findings of the last hour: only the recent open ones reach the real
// Alertmanager, the recording one and the webhook; the old ones are
// counted as skipped, in the metric and in one log line. The resolution
// of an old finding arriving later is not sent either (see
// docs/decisions.md), and a restart re-sends the recent alerts only.
func TestFirstStartMonthOfHistory(t *testing.T) {
	am := testenv.AlertmanagerURL(t)
	cfg := testConfig(t)
	cfg.Since, cfg.Lease = time.Hour, 10*time.Minute
	peer, hook := &recorder{}, &recorder{}
	peerSrv, hookSrv := httptest.NewServer(peer), httptest.NewServer(hook)
	defer peerSrv.Close()
	defer hookSrv.Close()
	cfg.AlertmanagerURLs, cfg.WebhookURLs = []string{am, peerSrv.URL}, []string{hookSrv.URL}
	clock := newFakeClock(time.Now().UTC().Truncate(time.Second))
	base := clock.Now()
	p := testenv.Name("history")
	today := model.MustParseDate(base.Format("2006-01-02"))

	var history []detect.Finding
	var oldOpen []detect.Finding
	for day := 1; day <= 35; day++ {
		date := today.AddDays(-day)
		raised := base.Add(-time.Duration(day)*24*time.Hour + 3*time.Hour)
		f := findingAt(t, p, date, date.Compact(), raised)
		history = append(history, f)
		if day%3 == 0 {
			history = append(history, resolution(f, raised.Add(2*time.Hour)))
		} else {
			oldOpen = append(oldOpen, f)
		}
	}
	edge := findingAt(t, p, today, "edge", base.Add(-time.Hour-time.Millisecond)) // just outside the window
	history = append(history, edge)
	oldRecords := len(history)
	var want []string
	for i, ago := range []time.Duration{time.Hour, 30 * time.Minute, time.Minute} {
		f := findingAt(t, p, today, fmt.Sprintf("recent%d", i), base.Add(-ago))
		history = append(history, f)
		want = append(want, f.Batch.String())
	}
	gone := findingAt(t, p, today, "recent-resolved", base.Add(-40*time.Minute))
	history = append(history, gone, resolution(gone, base.Add(-20*time.Minute)))
	sort.Strings(want)

	// The topic exists before notify's first start: create it with a
	// notifier that never runs (New creates the topics).
	pre, err := New(t.Context(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pre.Close()
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, records(history...)...)

	logs := &logLines{}
	first := startWith(t, cfg, clock.options(slog.New(slog.NewJSONHandler(logs, nil))))
	waitCommitted(t, cfg, "the history")
	testenv.Eventually(t, 30*time.Second, "the recent open findings firing in Alertmanager", func() (bool, string) {
		got := amBatches(t, am, p)
		return slices.Equal(got, want), fmt.Sprintf("alerts of %v, want %v", got, want)
	})
	wantPosted := append(slices.Clone(want), gone.Batch.String())
	sort.Strings(wantPosted)
	if got := postedBatches(t, peer, 0, p); !slices.Equal(got, wantPosted) {
		t.Errorf("the recording Alertmanager got alerts of %v, want only the last hour's %v and %s", got, want, gone.Batch)
	}
	hooked := map[string]int{}
	for _, q := range hook.accepted() {
		f, err := detect.ParseFinding(q.body)
		if err != nil {
			t.Fatal(err)
		}
		hooked[f.Batch.BatchID]++
	}
	if len(hooked) != 4 || hooked["recent-resolved"] != 2 || hooked["edge"] != 0 {
		t.Errorf("the webhook got records of %v, want the 3 recent open ones once and recent-resolved twice", hooked)
	}
	if got := value(t, first.n.m.Skipped); got != float64(oldRecords) {
		t.Errorf("handoff_notify_skipped_total %v, want %d (every record older than the window)", got, oldRecords)
	}
	testenv.Eventually(t, 10*time.Second, "the first start's summary line", func() (bool, string) {
		for _, l := range logs.lines(t) {
			if l["msg"] == "first start: the findings in the topic before it are consumed" {
				return l["skipped"] == float64(oldRecords) && l["delivered"] == float64(5), fmt.Sprintf("line %v", l)
			}
		}
		return false, "no summary line"
	})

	// An old finding resolves now: its resolution is not sent either.
	before, hookBefore := peer.count(), hook.count()
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, records(resolution(oldOpen[0], base))...)
	waitCommitted(t, cfg, "the resolution of an old finding")
	if got := value(t, first.n.m.Skipped); got != float64(oldRecords+1) {
		t.Errorf("skipped %v after an old finding's resolution, want %d", got, oldRecords+1)
	}
	if hook.count() != hookBefore {
		t.Errorf("the webhook got the resolution of a finding it never got")
	}
	for _, b := range postedBatches(t, peer, before, p) {
		if b == oldOpen[0].Batch.String() {
			t.Errorf("Alertmanager got the resolution of %s, which never paged", b)
		}
	}

	// A restart decides as the first start did: the rebuilt open set holds
	// the recent findings only, and only they are re-sent.
	first.stop(t)
	before = peer.count()
	second := startWith(t, cfg, clock.options(nil))
	<-second.n.Ready()
	if n := second.n.set.len(); n != len(want) {
		t.Errorf("restart: %d open findings rebuilt, want %d (the skipped ones are not open)", n, len(want))
	}
	testenv.Eventually(t, 20*time.Second, "the restarted notifier re-sending", func() (bool, string) {
		return peer.count() > before, fmt.Sprintf("%d requests", peer.count())
	})
	if got := postedBatches(t, peer, before, p); !slices.Equal(got, want) {
		t.Errorf("after the restart the recording Alertmanager got alerts of %v, want %v", got, want)
	}
	if got := amBatches(t, am, p); !slices.Equal(got, want) {
		t.Errorf("Alertmanager after the restart: %v, want %v", got, want)
	}
}

// TestHoldAlertmanager runs holds of 10 minutes (--for warning=10m) on the
// real Alertmanager with the clock the test moves: a finding resolved
// within its hold never pages; one still open when the hold runs out pages
// then, from the hold timer; one whose hold is cut by a restart of notify
// pages once, after the restart, when its hold runs out.
func TestHoldAlertmanager(t *testing.T) {
	am := testenv.AlertmanagerURL(t)
	cfg := testConfig(t)
	cfg.Lease, cfg.For = 10*time.Minute, Holds{"warning": 10 * time.Minute}
	peer := &recorder{}
	peerSrv := httptest.NewServer(peer)
	defer peerSrv.Close()
	cfg.AlertmanagerURLs = []string{am, peerSrv.URL}
	clock := newFakeClock(time.Now().UTC().Truncate(time.Second))
	base := clock.Now()
	today := model.MustParseDate(base.Format("2006-01-02"))
	quick := findingAt(t, testenv.Name("hold_quick"), today, "1", base)
	stays := findingAt(t, testenv.Name("hold_stays"), today, "1", base)

	first := startWith(t, cfg, clock.options(nil))
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, records(quick, stays)...)
	waitCommitted(t, cfg, "two open findings")
	if got := value(t, first.n.m.Held); got != 2 {
		t.Errorf("held %v, want 2", got)
	}
	clock.Advance(5 * time.Minute)
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, records(resolution(quick, clock.Now()))...)
	waitCommitted(t, cfg, "the resolution within the hold")
	if got := value(t, first.n.m.Held); got != 1 {
		t.Errorf("held %v after one resolved, want 1", got)
	}
	for _, f := range []detect.Finding{quick, stays} {
		if as := amAlerts(t, am, f.Batch.Pipeline); len(as) != 0 {
			t.Errorf("%s paged within its hold: %+v", f.Batch.Pipeline, as)
		}
	}

	clock.Advance(5 * time.Minute) // the hold runs out
	testenv.Eventually(t, 30*time.Second, "the finding still open after its hold paging", func() (bool, string) {
		as := amAlerts(t, am, stays.Batch.Pipeline)
		return len(as) == 1 && as[0].StartsAt.Equal(stays.RaisedAt), fmt.Sprintf("alerts %+v", as)
	})
	// Both were in the same open set: the snapshot that paged the one
	// would have held the other.
	if as := amAlerts(t, am, quick.Batch.Pipeline); len(as) != 0 {
		t.Errorf("resolved within its hold, yet it paged: %+v", as)
	}
	if got := postedBatches(t, peer, 0, quick.Batch.Pipeline); len(got) != 0 {
		t.Errorf("the recording Alertmanager got %v for the finding resolved within its hold", got)
	}

	// A restart in the middle of a hold.
	cut := findingAt(t, testenv.Name("hold_cut"), today, "1", clock.Now())
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, records(cut)...)
	waitCommitted(t, cfg, "a finding whose hold a restart cuts")
	clock.Advance(4 * time.Minute)
	first.stop(t)
	second := startWith(t, cfg, clock.options(nil))
	<-second.n.Ready()
	if got := value(t, second.n.m.Held); got != 1 {
		t.Errorf("restart: held %v rebuilt, want 1", got)
	}
	marker := peer.count()
	testenv.Eventually(t, 20*time.Second, "the restarted notifier re-sending the paged alert", func() (bool, string) {
		return slices.Contains(postedBatches(t, peer, marker, stays.Batch.Pipeline), stays.Batch.String()), "not yet"
	})
	if as := amAlerts(t, am, cut.Batch.Pipeline); len(as) != 0 {
		t.Errorf("paged after the restart before its hold ran out: %+v", as)
	}
	if got := postedBatches(t, peer, 0, cut.Batch.Pipeline); len(got) != 0 {
		t.Errorf("the recording Alertmanager got %v before the hold ran out", got)
	}
	clock.Advance(6 * time.Minute)
	testenv.Eventually(t, 30*time.Second, "the cut hold paging once after the restart", func() (bool, string) {
		as := amAlerts(t, am, cut.Batch.Pipeline)
		return len(as) == 1 && as[0].StartsAt.Equal(cut.RaisedAt), fmt.Sprintf("alerts %+v", as)
	})
	testenv.Eventually(t, 30*time.Second, "the recording Alertmanager getting it too", func() (bool, string) {
		return len(postedBatches(t, peer, marker, cut.Batch.Pipeline)) == 1, "not yet"
	})
	labelSets := map[string]bool{}
	for _, q := range peer.accepted() {
		var as []Alert
		json.Unmarshal(q.body, &as)
		for _, a := range as {
			if a.Labels["pipeline"] == cut.Batch.Pipeline {
				b, _ := json.Marshal(a.Labels)
				labelSets[string(b)+a.StartsAt.String()] = true
			}
		}
	}
	if len(labelSets) != 1 {
		t.Errorf("the recording Alertmanager got %d distinct alerts for the cut hold, want exactly 1: %v", len(labelSets), labelSets)
	}
}

// value reads a gauge's or a counter's value (gathered through a registry
// of its own).
func value(t testing.TB, m prometheus.Collector) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gather: %v (%d families)", err, len(mfs))
	}
	if g := mfs[0].GetMetric()[0].GetGauge(); g != nil {
		return g.GetValue()
	}
	return mfs[0].GetMetric()[0].GetCounter().GetValue()
}

package live_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// TestKafkaBacklogRaisesNothing: the detector starts with its clock past
// the seed batch's deadlines while the events that prove those boundaries
// (on time) sit in the topic behind a backlog of 100,000 messages in
// their partition, and
// handoff ingest has stored none of them (it is behind too). Nothing is
// raised: the deadlines wait for the watermark, which reaches the clock
// only once the backlog is folded. (A detector judging as of its clock
// would have raised signal_delivered overdue before reading the proof:
// analyzer/detect's TestBacklogRaisesNothingFalse.)
func TestKafkaBacklogRaisesNothing(t *testing.T) {
	e := newEnvWithoutIngest(t)
	e.cfg.Tick = 20 * time.Millisecond // many chances to judge too early
	// The tables exist (ingest created them earlier), empty: ingest is behind.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := schema.Ensure(ctx, e.conn, e.db); err != nil {
		t.Fatal(err)
	}
	const backlog = 100_000
	lines := seedLines(t)
	// The backlog sits in the seed batch's partition, before the proof.
	part := live.Murmur2([]byte("account-balance-snapshot.daily/2026-09-30/20260930"), 3)
	for i, n := 0, 0; n < backlog; i++ {
		if live.Murmur2([]byte(fmt.Sprintf("backlog.filler/c-%d", i)), 3) != part {
			continue
		}
		n++
		lines = append(lines, fmt.Sprintf(`{"spec":"handoff/v1","event_id":"backlog-%d","type":"process.heartbeat","time":"2026-09-30T12:00:00.000Z","pipeline":"backlog.filler","system":"consumer","component":"c-%d"}`, i, i))
	}
	// The rest of 2026-09-30's chain, each boundary on time: signal at the
	// receiver 21:00Z (due 22:00Z), identified 21:10Z (due 21:30Z),
	// consumed 21:20Z (due 23:00Z).
	const tmpl = `{"spec":"handoff/v1","event_id":"proof-%s","type":"%s","time":"%s","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"%s"%s}`
	lines = append(lines,
		fmt.Sprintf(tmpl, "1", "signal.transferred", "2026-09-30T21:00:00Z", "exchange", `,"object":"account_balance_snapshot_20260930.flag"`),
		fmt.Sprintf(tmpl, "2", "batch.identified", "2026-09-30T21:10:00Z", "consumer", ""),
		fmt.Sprintf(tmpl, "3", "consume.succeeded", "2026-09-30T21:20:00Z", "consumer", `,"rows":120345`),
	)
	e.publishLines(t, lines...)

	// Past every deadline of 2026-09-29 and 2026-09-30; 2026-10-01's first
	// (produced, 18:00Z) is still ahead.
	now := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	d := e.startDetector(t, now)
	behind := 0
	testenv.Eventually(t, 2*time.Minute, "the detector folds the backlog", func() (bool, string) {
		n, safe, pub := d.r.Progress()
		if n > 0 && safe.Before(now) {
			behind++
		}
		return !safe.Before(now), fmt.Sprintf("advances %d, safe %v, published %d", n, safe, pub)
	})
	e.settled(t, "every event folded and committed")
	if n, _, pub := d.r.Progress(); pub != 0 {
		t.Fatalf("published %d findings after %d advances, want none: every deadline was met by an event in the topic", pub, n)
	}
	if msgs := testenv.ReadAll(t, e.brokers, e.cfg.FindingsTopic); len(msgs) != 0 {
		t.Fatalf("the findings topic holds %d records, want none; first: %s", len(msgs), msgs[0].Value)
	}
	d.stop() // the detector is read only once Run has returned
	for _, k := range []string{"account-balance-snapshot.daily/2026-09-29/20260929", "account-balance-snapshot.daily/2026-09-30/20260930"} {
		bk, _ := model.ParseBatchKey(k)
		if dg, open := d.r.Detector().Diagnosis(bk); open {
			t.Errorf("%s still open (%s), want closed as delivered", k, dg.Status)
		}
	}
	t.Logf("the test saw %d polls with the detector advancing behind its clock (the backlog)", behind)
}

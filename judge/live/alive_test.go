package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// TestDetectAliveAsOfEvidence: the seed's history plus heartbeats of two
// more processes, one of which (loader) also beat after the detector's
// clock. The detector's finding, and after a restart (the history read
// back from ClickHouse) its diagnosis, name the processes alive as
// `handoff diagnose` as of the same time does: loader with its heartbeat
// before the clock. A detector used to keep only the latest heartbeat it
// read, the later one, and so name relay-1 alone.
func TestDetectAliveAsOfEvidence(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)
	const hb = `{"spec":"handoff/v1","event_id":"%s","type":"process.heartbeat","time":"%s","pipeline":"account-balance-snapshot.daily","system":"%s","component":"%s"}`
	lines := append(seedLines(t),
		fmt.Sprintf(hb, "hb-relay-1", "2026-10-02T10:00:00Z", "exchange", "relay-1"),
		fmt.Sprintf(hb, "hb-loader-1", "2026-10-02T11:00:00Z", "consumer", "loader"),
		fmt.Sprintf(hb, "hb-loader-2", "2026-10-02T13:00:00Z", "consumer", "loader"), // after the clock
	)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.publishLines(t, lines...)
	k := model.BatchKey{Pipeline: "account-balance-snapshot.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	var want replay.Diagnosis
	if err := json.Unmarshal(diagnoseFile(t, path, seedContracts(t), now)[k], &want); err != nil {
		t.Fatal(err)
	}
	wantAlive := aliveOf(want.Alive)
	if !strings.Contains(wantAlive, "loader@2026-10-02T11:00:00Z") || !strings.Contains(wantAlive, "relay-1") {
		t.Fatalf("diagnose names %q alive: the test's heartbeats do not reach it", wantAlive)
	}

	d := e.startDetector(t, now)
	d.caughtUp(t, now)
	e.waitFindings(t, "the seed's findings stored", 2)
	if got := e.storedAlive(t, k); got != wantAlive {
		t.Errorf("the stored finding names alive %q, diagnose %q", got, wantAlive)
	}
	d.stop()

	d2 := e.startDetector(t, now)
	d2.caughtUp(t, now)
	d2.stop()
	got, ok := d2.r.Detector().Diagnosis(k)
	if !ok {
		t.Fatalf("%s is not open in the restarted detector", k)
	}
	if g := aliveOf(got.Alive); g != wantAlive {
		t.Errorf("the restored detector names alive %q, diagnose %q", g, wantAlive)
	}
}

// aliveOf is the processes of a diagnosis' alive list with their times.
func aliveOf(hs []replay.Heartbeat) string {
	var s []string
	for _, h := range hs {
		s = append(s, h.Component+"@"+h.At.UTC().Format(time.RFC3339))
	}
	return strings.Join(s, " ")
}

// storedAlive is the alive list of the latest stored finding of batch k.
func (e *env) storedAlive(t *testing.T, k model.BatchKey) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := e.conn.Query(ctx, "SELECT argMax(diagnosis, seq) FROM "+e.db+"."+schema.Findings+" WHERE batch = ? GROUP BY fingerprint", k.String())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := ""
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			t.Fatal(err)
		}
		var d replay.Diagnosis
		if err := json.Unmarshal([]byte(text), &d); err != nil {
			t.Fatal(err)
		}
		out = aliveOf(d.Alive)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

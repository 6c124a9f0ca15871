package detect_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// arrival is an event and when it reached the topic (its event time, the
// producer's clock, may be earlier).
type arrival struct {
	at time.Time
	e  model.Event
}

// playArrivals feeds events in arrival order, advancing every step with
// the safe time at the step: what a detector reading a topic with late
// producers sees.
func playArrivals(d *detect.Detector, as []arrival, from, to time.Time, every time.Duration) []detect.Finding {
	slices.SortStableFunc(as, func(a, b arrival) int { return a.at.Compare(b.at) })
	var out []detect.Finding
	for t := from; !t.After(to); t = t.Add(every) {
		for len(as) > 0 && !as[0].at.After(t) {
			d.Observe(&as[0].e)
			as = as[1:]
		}
		out = append(out, wired(d.Advance(t, t))...)
	}
	return out
}

// withLateness returns the seed contract with allowed_lateness set (or the
// default, when lateness < 0).
func withLateness(t *testing.T, lateness time.Duration) *contract.Set {
	t.Helper()
	extra := ""
	if lateness >= 0 {
		extra = "allowed_lateness: " + lateness.String() + "\n"
	}
	body := "pipeline: " + seedPipeline + `
schedule: daily
timezone: Asia/Shanghai
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
deadlines:
  produced: "business_date + 1d 02:00"
  finalized: "+30m"
  consumed: "business_date + 1d 07:00"
` + extra
	c, err := contract.Parse("abs.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	set, err := contract.NewSet(c)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestAllowedLateness: an anomaly that depends on the order of events is
// raised only when it still holds once the allowed lateness of stream time
// has passed since the event that raised it. Out-of-order arrival within
// it pages nobody; without it (allowed_lateness: 0s) the same stream
// flaps; a real anomaly is raised once, the lateness after its event.
func TestAllowedLateness(t *testing.T) {
	start := at("2026-09-30T17:00:00Z")
	batch := func() []model.Event { return absDelivered("2026-09-30", "20260930", start) }
	// delayed delivers the events of the given types late by lag.
	delayed := func(es []model.Event, lag time.Duration, types ...model.EventType) []arrival {
		out := make([]arrival, len(es))
		for i, e := range es {
			out[i] = arrival{e.Time, e}
			if slices.Contains(types, e.Type) {
				out[i].at = e.Time.Add(lag)
			}
		}
		return out
	}
	tests := []struct {
		name     string
		lateness time.Duration // < 0: the contract default
		arrivals []arrival
		kind     detect.Kind
		want     []detect.State // the records of kind, in order
		raisedBy time.Duration  // when want opens: at least this long after the raising event
	}{
		{"final file reported after the signal, default lateness", -1,
			delayed(batch(), 6*time.Minute, model.ArtifactFinalized), detect.Kind(replay.SignalBeforeFinal), nil, 0},
		{"final file reported after the signal, no lateness", 0,
			delayed(batch(), 6*time.Minute, model.ArtifactFinalized), detect.Kind(replay.SignalBeforeFinal), []detect.State{detect.Open, detect.Resolved}, 0},
		{"signal really before the final file", -1, func() []arrival {
			es := batch()
			es[2].Time = es[4].Time.Add(time.Minute) // finalized a minute after the signal
			return delayed(es, 0)
		}(), detect.Kind(replay.SignalBeforeFinal), []detect.State{detect.Open}, contract.DefaultAllowedLateness},
		{"upstream reported after the consumption, default lateness", -1,
			delayed(batch()[8:], 0), detect.Kind(replay.OrphanConsumption), []detect.State{detect.Open}, contract.DefaultAllowedLateness},
		{"upstream late within the lateness", -1, func() []arrival {
			es := batch()
			out := delayed(es, 0)
			for i := range out[:8] {
				out[i].at = es[9].Time.Add(2 * time.Minute)
			}
			return out
		}(), detect.Kind(replay.OrphanConsumption), nil, 0},
		{"upstream late within the lateness, no lateness", 0, func() []arrival {
			es := batch()
			out := delayed(es, 0)
			for i := range out[:8] {
				out[i].at = es[9].Time.Add(2 * time.Minute)
			}
			return out
		}(), detect.Kind(replay.OrphanConsumption), []detect.State{detect.Open, detect.Resolved}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			contracts := withLateness(t, tt.lateness)
			d := mustNew(t, detect.Config{Contracts: contracts})
			fs := playArrivals(d, slices.Clone(tt.arrivals), start.Add(-time.Hour), start.Add(3*time.Hour), 30*time.Second)
			var got []detect.State
			var openAt time.Time
			for _, f := range byKind(fs, tt.kind) {
				got = append(got, f.State)
				if f.State == detect.Open && openAt.IsZero() {
					openAt = f.EvidenceAsOf
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("%s records %v, want %v", tt.kind, got, tt.want)
			}
			if tt.raisedBy > 0 {
				var first time.Time
				for _, a := range tt.arrivals {
					if a.e.Type == model.SignalPublished || (tt.kind == detect.Kind(replay.OrphanConsumption) && a.e.Type == model.ConsumeSucceeded) {
						first = a.e.Time
						break
					}
				}
				if openAt.Sub(first) < tt.raisedBy {
					t.Errorf("opened at %v, %v after the raising event: want at least %v", openAt, openAt.Sub(first), tt.raisedBy)
				}
			}
			// diagnose as of the end says what the detector says.
			set := batches.New(contracts, start.Add(3*time.Hour))
			for _, a := range tt.arrivals {
				set.Add(&a.e)
			}
			dg := set.Diagnose(nil)[0]
			has := slices.ContainsFunc(dg.Anomalies, func(a replay.Anomaly) bool { return detect.Kind(a.Kind) == tt.kind })
			if wantOpen := len(tt.want) > 0 && tt.want[len(tt.want)-1] == detect.Open; has != wantOpen {
				t.Errorf("diagnose as of the end: %s %v, the detector's last record open %v", tt.kind, has, wantOpen)
			}
		})
	}
}

// TestAllowedLatenessAsOf: the rule is a function of the events and the
// as-of time only, so diagnose --as-of T says what a detector whose
// evidence time is T says: a signal with no final file is withheld until
// T reaches the signal's time plus the allowed lateness, and the
// success_without_artifact of a job that succeeded with no final file
// waits for finalized's deadline plus the lateness, while the overdue
// finding is not delayed.
func TestAllowedLatenessAsOf(t *testing.T) {
	start := at("2026-09-30T17:00:00Z")
	es := absDelivered("2026-09-30", "20260930", start)
	signalOnly := []model.Event{es[0], es[3], es[4]} // started, succeeded (17:06), signal (17:08): no final file
	contracts := withLateness(t, -1)
	finalizedDue := at("2026-09-30T17:36:00Z") // produced 17:06 + 30m
	tests := []struct {
		asOf  time.Time
		kinds []replay.AnomalyKind
	}{
		{at("2026-09-30T17:12:59Z"), nil},
		{at("2026-09-30T17:13:00Z"), []replay.AnomalyKind{replay.SignalBeforeFinal}},
		{finalizedDue.Add(time.Minute), []replay.AnomalyKind{replay.SignalBeforeFinal, replay.Late}},
		{finalizedDue.Add(contract.DefaultAllowedLateness + time.Millisecond), []replay.AnomalyKind{replay.SignalBeforeFinal, replay.SuccessWithoutArtifact, replay.Late}},
	}
	for _, tt := range tests {
		set := batches.New(contracts, tt.asOf)
		for i := range signalOnly {
			set.Add(&signalOnly[i])
		}
		dg := set.Diagnose(nil)[0]
		var got []replay.AnomalyKind
		for _, a := range dg.Anomalies {
			got = append(got, a.Kind)
		}
		if !slices.Equal(got, tt.kinds) {
			t.Errorf("as of %s: anomalies %v, want %v", tt.asOf.Format(time.TimeOnly), got, tt.kinds)
		}
		d := mustNew(t, detect.Config{Contracts: contracts})
		for i := range signalOnly {
			d.Observe(&signalOnly[i])
		}
		d.Advance(tt.asOf, tt.asOf)
		if live, ok := d.Diagnosis(model.BatchKey{Pipeline: seedPipeline, BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}); !ok ||
			string(live.AppendJSON(nil)) != string(dg.AppendJSON(nil)) {
			t.Errorf("as of %s: the detector's diagnosis differs from diagnose's", tt.asOf.Format(time.TimeOnly))
		}
	}
}

// TestReportedLateIsNotDeliveredLate: a boundary proven, by its event
// time, before its deadline but observed after it resolves the overdue
// finding as on time with lateness 0 and the reporting delay as its own
// figure; one proven after its deadline keeps its lateness. Lateness is
// never negative.
func TestReportedLateIsNotDeliveredLate(t *testing.T) {
	deadline := at("2026-09-30T18:00:00Z") // produced: business_date + 1d 02:00 Asia/Shanghai
	tests := []struct {
		name         string
		succeeded    time.Time // event time of job.succeeded
		arrives      time.Time
		wantLateness time.Duration
		wantDelay    time.Duration
		onTime       bool
	}{
		{"on time, reported 8m late", deadline.Add(-5 * time.Minute), deadline.Add(8 * time.Minute), 0, 13 * time.Minute, true},
		{"late, reported at once", deadline.Add(7 * time.Minute), deadline.Add(7 * time.Minute), 7 * time.Minute, 0, false},
		{"late, reported later still", deadline.Add(3 * time.Minute), deadline.Add(9 * time.Minute), 3 * time.Minute, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := absEvent("s", "2026-09-30", "20260930", model.JobStarted, deadline.Add(-time.Hour))
			ok := absEvent("ok", "2026-09-30", "20260930", model.JobSucceeded, tt.succeeded)
			d := mustNew(t, detect.Config{Contracts: seedContracts(t)})
			fs := playArrivals(d, []arrival{{started.Time, started}, {tt.arrives, ok}}, deadline.Add(-2*time.Hour), deadline.Add(20*time.Minute), time.Minute)
			var res *detect.Finding
			for i, f := range fs {
				if f.Lateness < 0 {
					t.Errorf("%s %s: lateness %v: never negative", f.Kind, f.State, f.Lateness)
				}
				if f.Kind == detect.Overdue && f.Name == "produced" && f.State == detect.Resolved {
					res = &fs[i]
				}
			}
			if res == nil {
				t.Fatalf("no resolved overdue produced finding (%v)", summarize(fs))
			}
			if res.Lateness != tt.wantLateness || res.ReportingDelay != tt.wantDelay {
				t.Errorf("lateness %v, reporting delay %v; want %v, %v", res.Lateness, res.ReportingDelay, tt.wantLateness, tt.wantDelay)
			}
			if got := strings.HasPrefix(res.Resolution, "on time") && strings.Contains(res.Resolution, "reported late by "+replay.FormatDuration(tt.wantDelay)); got != tt.onTime {
				t.Errorf("resolution %q: on time %v, want %v", res.Resolution, got, tt.onTime)
			}
		})
	}
}

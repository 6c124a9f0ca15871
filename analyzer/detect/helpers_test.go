package detect_test

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

const seedPipeline = "account-balance-snapshot.daily"

// seedContracts loads the seed case's contract from deploy/contracts.
func seedContracts(t testing.TB) *contract.Set {
	return loadContracts(t, "contracts/"+seedPipeline+".yaml")
}

// loadContracts loads a contract file or directory under deploy/.
func loadContracts(t testing.TB, path string) *contract.Set {
	t.Helper()
	set, err := contract.LoadFS(os.DirFS("../../deploy"), path)
	if err != nil {
		t.Fatalf("loading deploy/%s: %v", path, err)
	}
	return set
}

// seedEvents decodes deploy/demo/seed-case.jsonl with the wire decoder, as
// the wiring would read them from Kafka.
func seedEvents(t testing.TB) []model.Event {
	t.Helper()
	data, err := os.ReadFile("../../deploy/demo/seed-case.jsonl")
	if err != nil {
		t.Fatalf("reading the seed events: %v", err)
	}
	var dec model.Decoder
	var out []model.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		e, err := dec.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("seed event %s: %v", sc.Bytes(), err)
		}
		out = append(out, e)
	}
	return out
}

func mustNew(t testing.TB, cfg detect.Config) *detect.Detector {
	t.Helper()
	d, err := detect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// stream plays a topic: events become visible at their event time (the
// producer's clock is the topic's), and each step observes what became
// visible and advances with the safe time at the step and now a lag later.
type stream struct {
	d        *detect.Detector
	pending  []model.Event // sorted by time
	findings []detect.Finding
}

func newStream(d *detect.Detector, events []model.Event) *stream {
	s := &stream{d: d, pending: slices.Clone(events)}
	slices.SortStableFunc(s.pending, func(a, b model.Event) int { return a.Time.Compare(b.Time) })
	return s
}

// step observes every event up to safe and advances to (safe+lag, safe).
func (s *stream) step(safe time.Time, lag time.Duration) []detect.Finding {
	for len(s.pending) > 0 && !s.pending[0].Time.After(safe) {
		s.d.Observe(&s.pending[0])
		s.pending = s.pending[1:]
	}
	fs := wired(s.d.Advance(safe.Add(lag), safe))
	s.findings = append(s.findings, fs...)
	return fs
}

// run steps from..to every interval.
func (s *stream) run(from, to time.Time, every, lag time.Duration) []detect.Finding {
	var out []detect.Finding
	for t := from; !t.After(to); t = t.Add(every) {
		out = append(out, s.step(t, lag)...)
	}
	return out
}

// summary is what a test compares of a finding: its identity, state and
// lateness, not the clock it was raised at.
type summary struct {
	Batch, Kind, Name string
	State             detect.State
	Seq               int
	Lateness          time.Duration
}

func summarize(fs []detect.Finding) []summary {
	out := make([]summary, len(fs))
	for i, f := range fs {
		out[i] = summary{f.Batch.String(), string(f.Kind), f.Name, f.State, f.Seq, f.Lateness}
	}
	return out
}

// latest keeps the latest record of each fingerprint, sorted by
// fingerprint: what a findings table shows after the fact.
func latest(fs []detect.Finding) []detect.Finding {
	m := map[string]detect.Finding{}
	for _, f := range fs {
		if o, ok := m[f.Fingerprint]; !ok || f.Seq > o.Seq {
			m[f.Fingerprint] = f
		}
	}
	out := make([]detect.Finding, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b detect.Finding) int { return cmp.Compare(a.Fingerprint, b.Fingerprint) })
	return out
}

// wired checks that every finding survives its wire format: it parses
// back (its fingerprint matches its batch, kind and name; resolved_at is
// there exactly when resolved; the diagnosis is of its batch).
func wired(fs []detect.Finding) []detect.Finding {
	for i := range fs {
		if _, err := detect.ParseFinding(fs[i].AppendJSON(nil)); err != nil {
			panic(fmt.Sprintf("a published finding does not parse back: %v", err))
		}
	}
	return fs
}

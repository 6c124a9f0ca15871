package remedy_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/model/manifest"
)

const seedContract = `pipeline: abs.daily
schedule: daily
timezone: Asia/Shanghai
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
deadlines:
  signal_delivered: "business_date + 1d 06:00"
rows:
  min: 1
`

const (
	rows  = 120345
	size  = 9876543
	sum   = "sha256:9f2c5a11aa"
	asOf  = "2026-10-03T00:00:00Z"
	batch = "abs.daily/2026-09-30/20260930"
)

// world is a seed case in the making: events per batch and the files at
// the receiver, changed by each test case.
type world struct {
	events []model.Event
	facts  remedy.Facts
	c      *contract.Contract
	asOf   time.Time
}

func ev(date, id string, typ model.EventType, at string, mod func(*model.Event)) model.Event {
	e := model.Event{Spec: model.SpecV1, ID: id, Type: typ, Pipeline: "abs.daily", BusinessDate: model.MustParseDate(date),
		BatchID: strings.ReplaceAll(date, "-", ""), System: model.Producer}
	e.Time, _ = time.Parse(time.RFC3339, at)
	if typ.NeedsObject() {
		e.Object = "account_balance_snapshot_" + e.BatchID + ".csv"
		if typ.IsSignal() {
			e.Object = "account_balance_snapshot_" + e.BatchID + ".flag"
		}
	}
	if typ.NeedsRows() {
		e.Rows, e.HasRows = rows, true
	}
	if mod != nil {
		mod(&e)
	}
	return e
}

func withSum(e *model.Event) { e.Checksum, e.Bytes, e.HasBytes = sum, size, true }

// delivered is a whole batch.
func delivered(date string) []model.Event {
	p := "p-" + date
	return []model.Event{
		ev(date, p+"-1", model.JobSucceeded, date+"T17:14:05Z", nil),
		ev(date, p+"-2", model.ArtifactFinalized, date+"T17:14:02Z", withSum),
		ev(date, p+"-3", model.SignalPublished, date+"T17:14:06Z", nil),
		ev(date, p+"-4", model.ArtifactTransferred, date+"T17:20:05Z", withSum),
		ev(date, p+"-5", model.SignalTransferred, date+"T17:20:06Z", nil),
		ev(date, p+"-6", model.BatchIdentified, date+"T17:25:00Z", nil),
		ev(date, p+"-7", model.ConsumeSucceeded, date+"T17:30:00Z", nil),
	}
}

func seed(t *testing.T) *world {
	c, err := contract.Parse("abs.yaml", []byte(seedContract))
	if err != nil {
		t.Fatal(err)
	}
	d := "2026-09-30"
	w := &world{c: c, asOf: mustTime(asOf)}
	w.events = append(delivered("2026-09-29"),
		ev(d, "s-1", model.JobSucceeded, d+"T17:14:05Z", nil),
		ev(d, "s-2", model.ArtifactFinalized, d+"T17:14:02Z", withSum),
		ev(d, "s-3", model.SignalPublished, d+"T17:14:06Z", func(e *model.Event) { e.Rows, e.HasRows = rows, true }),
		ev(d, "s-4", model.ArtifactTransferred, d+"T17:20:05Z", withSum),
	)
	w.facts = remedy.Facts{Dir: "/inbox/finance",
		Artifact: remedy.File{Name: "account_balance_snapshot_20260930.csv", Exists: true, Regular: true, Readable: true,
			Size: size, Rows: rows, Checksum: sum, Stable: true, Settle: time.Second},
		Signal: remedy.File{Name: "account_balance_snapshot_20260930.flag", Err: "does not exist"},
	}
	return w
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

type one struct{ c *contract.Contract }

func (o one) For(string) *contract.Contract { return o.c }

// diagnose replays w's events and returns the seed batch's diagnosis and
// every other.
func (w *world) diagnose(t *testing.T) (replay.Diagnosis, []replay.Diagnosis) {
	t.Helper()
	return w.diagnose2(t, batch)
}

// diagnose2 is diagnose for another batch key.
func (w *world) diagnose2(t *testing.T, key string) (replay.Diagnosis, []replay.Diagnosis) {
	t.Helper()
	s := batches.New(one{w.c}, w.asOf)
	for i := range w.events {
		s.Add(&w.events[i])
	}
	all := s.Diagnose(nil)
	for _, d := range all {
		if d.Batch == key {
			return d, all
		}
	}
	t.Fatalf("no diagnosis of %s", key)
	return replay.Diagnosis{}, nil
}

func (w *world) restore(t *testing.T) remedy.Plan {
	d, _ := w.diagnose(t)
	return remedy.Restore(&d, w.c, w.facts)
}

func TestRestoreSeedEveryPreconditionProven(t *testing.T) {
	w := seed(t)
	p := w.restore(t)
	var names []string
	for _, r := range p.Preconditions {
		names = append(names, r.Name)
		if !r.Proven {
			t.Errorf("%s not proven: %s", r.Name, r.Detail)
		}
		if r.Detail == "" || r.Evidence == nil {
			t.Errorf("%s: no detail or nil evidence: %+v", r.Name, r)
		}
	}
	if !slices.Equal(names, remedy.Preconditions[:]) {
		t.Fatalf("preconditions %v, want %v", names, remedy.Preconditions)
	}
	if p.Signal != "account_balance_snapshot_20260930.flag" || p.InPlace || len(p.Content) != 0 || !p.Proven() {
		t.Fatalf("plan %+v", p)
	}
	d, _ := w.diagnose(t)
	e := p.Event(&d, w.facts, remedy.Who{User: "ops", Host: "h1", Reason: "seed case"}, w.asOf)
	if err := e.Validate(); err != nil {
		t.Fatalf("signal.restored does not validate: %v", err)
	}
	if e.Type != model.SignalRestored || e.System != model.Operator || e.Object != p.Signal || e.Rows != rows || e.Attrs["reason"] != "seed case" || e.Attrs["restored_by"] != "ops" {
		t.Fatalf("event %+v", e)
	}
	again := p.Event(&d, w.facts, remedy.Who{User: "someone else"}, w.asOf.Add(time.Hour))
	if again.ID != e.ID {
		t.Fatalf("the same restore recorded twice gets two ids: %s, %s", e.ID, again.ID)
	}
}

// TestRestoreRefusals: each case breaks one precondition, and exactly that
// one (or the ones it implies) is not proven.
func TestRestoreRefusals(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(w *world)
		want   []string
		detail string
	}{
		{"rows at the receiver differ", func(w *world) { w.facts.Artifact.Rows = rows - 1 }, []string{remedy.PreRows}, "has 120344 rows, but artifact.finalized recorded 120345"},
		{"checksum differs", func(w *world) { w.facts.Artifact.Checksum = "sha256:0000" }, []string{remedy.PreChecksum}, "recomputed sha256:0000"},
		{"size differs", func(w *world) { w.facts.Artifact.Size = size + 1 }, []string{remedy.PreChecksum}, "9876544 bytes"},
		{"name derives from another batch", func(w *world) {
			w.events[len(w.events)-1].Object = "account_balance_snapshot_20260929.csv"
		}, []string{remedy.PreIdentity}, "identity_mismatch"},
		{"only a temp file", func(w *world) {
			w.facts.Artifact = remedy.File{Name: w.facts.Artifact.Name, Err: "does not exist", Temps: []string{"account_balance_snapshot_20260930.csv.part"}}
		}, []string{remedy.PreArtifactReceiver, remedy.PreRows, remedy.PreChecksum}, "only a temporary copy"},
		{"still growing", func(w *world) { w.facts.Artifact.Stable = false }, []string{remedy.PreArtifactReceiver}, "still growing"},
		{"temp copy beside the file", func(w *world) { w.facts.Artifact.Temps = []string{".account_balance_snapshot_20260930.csv.a1B2c3"} }, []string{remedy.PreArtifactReceiver}, "temporary copy is beside it"},
		{"signal already there", func(w *world) {
			w.facts.Signal = remedy.File{Name: w.facts.Signal.Name, Exists: true, Regular: true, Readable: true, Content: []byte("rows=5\n")}
		}, []string{remedy.PreNoSignal}, "other content"},
		{"signal delivery recorded", func(w *world) {
			w.events = append(w.events, ev("2026-09-30", "s-9", model.SignalTransferred, "2026-09-30T17:21:00Z", nil))
		}, []string{remedy.PreDiagnosis, remedy.PreNoSignal}, "already recorded"},
		{"previous batch not delivered", func(w *world) {
			w.events = slices.DeleteFunc(w.events, func(e model.Event) bool { return e.ID == "p-2026-09-29-7" })
		},
			[]string{remedy.PrePreviousDelivered}, "2026-09-29/20260929 is not delivered"},
		{"not transferred", func(w *world) { w.events = w.events[:len(w.events)-1] }, []string{remedy.PreDiagnosis, remedy.PreArtifactReceiver}, "verdict not_transferred"},
		{"signal not yet due", func(w *world) { w.asOf = mustTime("2026-09-30T18:00:00Z") }, []string{remedy.PreDiagnosis}, "status in_progress"},
		{"no finalized rows", func(w *world) {
			w.events = slices.DeleteFunc(w.events, func(e model.Event) bool { return e.ID == "s-2" || e.ID == "s-3" })
		}, []string{remedy.PreDiagnosis, remedy.PreArtifactFinal, remedy.PreRows}, ""},
		{"below the minimum", func(w *world) {
			w.c.Rows.Equal = false
			w.facts.Artifact.Rows = 0
		}, []string{remedy.PreRows}, "below the contract's minimum of 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := seed(t)
			tt.change(w)
			p := w.restore(t)
			if got := p.Unproven(); !slices.Equal(got, tt.want) {
				for _, r := range p.Preconditions {
					t.Logf("%s %v: %s", r.Name, r.Proven, r.Detail)
				}
				t.Fatalf("unproven %v, want %v", got, tt.want)
			}
			if p.Proven() || p.InPlace {
				t.Fatalf("plan proven %v, in place %v", p.Proven(), p.InPlace)
			}
			all := ""
			for _, r := range p.Preconditions {
				all += r.Detail + "\n"
			}
			if !strings.Contains(all, tt.detail) {
				t.Fatalf("no precondition says %q:\n%s", tt.detail, all)
			}
		})
	}
}

func TestRestoreInPlace(t *testing.T) {
	w := seed(t)
	w.facts.Signal = remedy.File{Name: w.facts.Signal.Name, Exists: true, Regular: true, Readable: true, Content: []byte{}}
	p := w.restore(t)
	if !p.InPlace || p.Proven() || !slices.Equal(p.Unproven(), []string{remedy.PreNoSignal}) {
		t.Fatalf("an identical signal in place: in place %v, unproven %v", p.InPlace, p.Unproven())
	}
}

// TestRestorePresentIsNotProof: a signal already at the receiver is "in
// place" only when everything else is proven; a link, dangling or not, is
// never a signal in place, and a linked data file is not at the receiver.
func TestRestorePresentIsNotProof(t *testing.T) {
	for _, tt := range []struct {
		name     string
		mod      func(w *world)
		present  bool
		unproven []string
		detail   string // some precondition's detail says this
	}{
		{"rows and checksum differ", func(w *world) {
			w.facts.Signal = remedy.File{Name: w.facts.Signal.Name, Exists: true, Regular: true, Readable: true, Content: []byte{}}
			w.facts.Artifact.Rows, w.facts.Artifact.Checksum = rows-1, "sha256:00"
		}, true, []string{remedy.PreRows, remedy.PreChecksum, remedy.PreNoSignal}, "a regular file holding exactly what a restore would write"},
		{"dangling link as the signal", func(w *world) {
			w.facts.Signal = remedy.File{Name: w.facts.Signal.Name, Exists: true, Link: "/nowhere/x.flag", Dangling: true, Err: "a symbolic link"}
		}, false, []string{remedy.PreNoSignal}, `is a dangling symbolic link: its target "/nowhere/x.flag" does not exist`},
		{"link to an empty file elsewhere", func(w *world) {
			w.facts.Signal = remedy.File{Name: w.facts.Signal.Name, Exists: true, Link: "/tmp/empty", Err: "a symbolic link"}
		}, false, []string{remedy.PreNoSignal}, `is a symbolic link to "/tmp/empty", not a regular file in the receiver directory`},
		{"linked data file", func(w *world) {
			w.facts.Artifact = remedy.File{Name: w.facts.Artifact.Name, Exists: true, Link: "/etc/passwd", Err: "a symbolic link"}
		}, false, []string{remedy.PreArtifactReceiver, remedy.PreRows, remedy.PreChecksum}, `is a symbolic link to "/etc/passwd"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := seed(t)
			tt.mod(w)
			p := w.restore(t)
			if p.InPlace || p.Present != tt.present || !slices.Equal(p.Unproven(), tt.unproven) {
				t.Fatalf("in place %v, present %v, unproven %v; want not in place, present %v, unproven %v", p.InPlace, p.Present, p.Unproven(), tt.present, tt.unproven)
			}
			var all string
			for _, r := range p.Preconditions {
				all += r.Detail + "\n"
			}
			if !strings.Contains(all, tt.detail) {
				t.Fatalf("no precondition says %q:\n%s", tt.detail, all)
			}
		})
	}
}

// TestRestoreLongNames: a derived name over 255 bytes is said to be one
// no receiver can hold, not "not at the receiver".
func TestRestoreLongNames(t *testing.T) {
	w := seed(t)
	// A batch id of 248 bytes (the wire format allows 256) in the seed's
	// templates: a signal name of 278 bytes.
	long := strings.Repeat("x", 240)
	for i := range w.events {
		if w.events[i].BatchID == "20260930" {
			w.events[i].BatchID = "20260930" + long
		}
	}
	d, _ := w.diagnose2(t, "abs.daily/2026-09-30/20260930"+long)
	p := remedy.Restore(&d, w.c, w.facts)
	var detail string
	for _, r := range p.Preconditions {
		if r.Name == remedy.PreNoSignal {
			detail = r.Detail
		}
	}
	if p.Proven() || !strings.Contains(detail, "over the 255-byte limit of a file name") {
		t.Fatalf("unproven %v, no_signal_present: %s", p.Unproven(), detail)
	}
}

func TestRestoreManifestContent(t *testing.T) {
	w := seed(t)
	w.c.SignalContent = contract.SignalManifest
	p := w.restore(t)
	m, err := manifest.Parse(p.Content)
	if err != nil {
		t.Fatalf("content %q: %v", p.Content, err)
	}
	f, ok := m.File("account_balance_snapshot_20260930.csv")
	if m.Key.String() != batch || m.Rows != rows || !ok || f.Checksum != sum || f.Bytes != size {
		t.Fatalf("manifest %+v", m)
	}
}

// fixed is the seed after the fix: the signal restored, the batch
// identified and consumed once.
func fixed(t *testing.T) *world {
	w := seed(t)
	d := "2026-09-30"
	w.events = append(w.events,
		ev(d, "f-1", model.SignalRestored, "2026-10-02T09:00:00Z", func(e *model.Event) { e.System = model.Operator }),
		ev(d, "f-2", model.BatchIdentified, "2026-10-02T09:01:00Z", func(e *model.Event) { e.System = model.Consumer }),
		ev(d, "f-3", model.ConsumeSucceeded, "2026-10-02T09:02:00Z", func(e *model.Event) { e.System = model.Consumer }),
	)
	w.facts.Signal = remedy.File{Name: w.facts.Signal.Name, Exists: true, Regular: true, Readable: true, Content: []byte{}}
	return w
}

func (w *world) verify(t *testing.T) remedy.Verification {
	d, all := w.diagnose(t)
	return remedy.Verify(&d, all, w.c, w.facts)
}

func TestVerifyFixedSeedPasses(t *testing.T) {
	v := fixed(t).verify(t)
	var names []string
	for _, c := range v.Checks {
		names = append(names, c.Name)
		if !c.Proven {
			t.Errorf("%s failed: %s", c.Name, c.Detail)
		}
	}
	if !slices.Equal(names, remedy.Checks[:]) || !v.Passed() {
		t.Fatalf("checks %v, passed %v", names, v.Passed())
	}
}

func TestVerifyFailures(t *testing.T) {
	d := "2026-09-30"
	for _, tt := range []struct {
		name   string
		change func(w *world)
		want   []string
	}{
		{"not consumed yet", func(w *world) { w.events = w.events[:len(w.events)-1] }, []string{remedy.CheckConsumedOnce, remedy.CheckRowsMatch, remedy.CheckDelivered}},
		{"consumed twice", func(w *world) {
			w.events = append(w.events, ev(d, "f-4", model.ConsumeSucceeded, "2026-10-02T10:00:00Z", nil))
		}, []string{remedy.CheckConsumedOnce, remedy.CheckDelivered}},
		{"consumed other row count", func(w *world) {
			w.events[len(w.events)-1].Rows = 5
		}, []string{remedy.CheckRowsMatch, remedy.CheckDelivered}},
		{"artifact gone", func(w *world) { w.facts.Artifact = remedy.File{Name: w.facts.Artifact.Name, Err: "does not exist"} },
			[]string{remedy.CheckArtifactReadable, remedy.CheckRowsMatch}},
		{"artifact changed after the fix", func(w *world) { w.facts.Artifact.Checksum = "sha256:beef" }, []string{remedy.CheckArtifactReadable}},
		{"a new batch on the same date", func(w *world) {
			w.events = append(w.events, ev(d, "n-1", model.JobSucceeded, "2026-10-02T09:00:00Z", func(e *model.Event) { e.BatchID = "20260930-rerun" }))
		}, []string{remedy.CheckNoOtherBatch}},
		{"previous batch consumed again since the signal", func(w *world) {
			w.events = append(w.events, ev("2026-09-29", "p-again", model.ConsumeSucceeded, "2026-10-02T09:05:00Z", nil))
		}, []string{remedy.CheckNoOtherBatch}},
		{"manifest that disagrees", func(w *world) {
			w.c.SignalContent = contract.SignalManifest
			k, _ := model.ParseBatchKey(batch)
			w.facts.Signal.Content = manifest.New(k, manifest.File{Name: w.facts.Artifact.Name, Rows: 1, Bytes: size, Checksum: sum}).Encode()
		}, []string{remedy.CheckSignalIdentity}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := fixed(t)
			tt.change(w)
			v := w.verify(t)
			if got := v.Failed(); !slices.Equal(got, tt.want) || v.Passed() {
				for _, c := range v.Checks {
					t.Logf("%s %v: %s", c.Name, c.Proven, c.Detail)
				}
				t.Fatalf("failed %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEventIDIsAUUID(t *testing.T) {
	k, _ := model.ParseBatchKey(batch)
	id := remedy.EventID(k, "x.flag", nil)
	if len(id) != 36 || id[14] != '8' || !strings.ContainsRune("89ab", rune(id[19])) {
		t.Fatalf("id %s is not a version 8 UUID", id)
	}
	if remedy.EventID(k, "x.flag", []byte("a")) == id || remedy.EventID(k, "y.flag", nil) == id {
		t.Fatal("different content or object, same id")
	}
}

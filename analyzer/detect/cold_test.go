package detect

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

type noContracts struct{}

func (noContracts) For(p string) *contract.Contract { return contract.Default(p) }
func (noContracts) Pipelines() []string             { return nil }

// eventsOf returns what b's state holds, in a fixed order, with strings of
// their own.
func eventsOf(d *Detector, b *batch) []model.Event {
	var out []model.Event
	d.thaw(b).Each(func(e *model.Event) {
		c := *e
		c.ID, c.Component, c.Object, c.Checksum, c.Error = strings.Clone(c.ID), strings.Clone(c.Component),
			strings.Clone(c.Object), strings.Clone(c.Checksum), strings.Clone(c.Error)
		c.Pipeline, c.BatchID = strings.Clone(c.Pipeline), strings.Clone(c.BatchID)
		out = append(out, c)
	})
	slices.SortFunc(out, func(x, y model.Event) int {
		if c := x.Time.Compare(y.Time); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out
}

// TestFreezeKeepsEveryField freezes batches whose events take every form
// of the packed encoding (and the ones it must not mistake for them) and
// checks that thawing gives back the same events and the same diagnosis.
func TestFreezeKeepsEveryField(t *testing.T) {
	date := model.MustParseDate("2026-09-30")
	t0 := date.In(time.UTC).Add(17 * time.Hour)
	const uuid = "0f8e2a7c-1b3d-4e5f-8a9b-0c1d2e3f4a5b"
	const sum = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	long := strings.Repeat("x", 300)
	ev := func(id string, typ model.EventType, sys model.System, at time.Time, mut func(*model.Event)) model.Event {
		e := model.Event{Spec: model.SpecV1, ID: id, Type: typ, System: sys, Time: at, Pipeline: "p.daily", BusinessDate: date, BatchID: "20260930"}
		if mut != nil {
			mut(&e)
		}
		return e
	}
	many := func(n int, mut func(i int, e *model.Event)) []model.Event {
		var out []model.Event
		for i := range n {
			e := ev(fmt.Sprintf("e-%05d", i), model.ArtifactTransferred, model.Exchange, t0.Add(time.Duration(i)*time.Second), nil)
			mut(i, &e)
			out = append(out, e)
		}
		return out
	}
	tests := []struct {
		name   string
		events []model.Event
	}{
		{"uuid and sha256", []model.Event{
			ev(uuid, model.ArtifactFinalized, model.Producer, t0, func(e *model.Event) {
				e.Object, e.Checksum, e.Component, e.Bytes, e.HasBytes, e.Rows, e.HasRows = "a.csv", sum, "producer-1", 12, true, 100, true
			}),
			ev(strings.Replace(uuid, "0", "1", 1), model.ArtifactTransferred, model.Exchange, t0.Add(time.Minute), func(e *model.Event) {
				e.Object, e.Checksum, e.Component = "a.csv", sum, "exchange-1"
			}),
		}},
		{"near misses of the binary forms", []model.Event{
			ev(strings.ToUpper(uuid), model.JobStarted, model.Producer, t0, func(e *model.Event) { e.Checksum = strings.ToUpper(sum) }),
			ev(strings.Replace(uuid, "-", "x", 1), model.JobSucceeded, model.Producer, t0, func(e *model.Event) { e.Checksum = sum[:70] + "g" }),
			ev(uuid[:35]+"g", model.ArtifactFinalized, model.Producer, t0, func(e *model.Event) { e.Checksum = "md5:abc" }),
			ev("", model.SignalPublished, model.Producer, t0, nil),
		}},
		{"numbers and times", []model.Event{
			ev("a", model.JobStarted, model.Producer, date.In(time.UTC).Add(-30*time.Hour), func(e *model.Event) { e.Attempt, e.HasAttempt = 0, true }),
			ev("b", model.ConsumeStarted, model.Consumer, t0.Add(123*time.Millisecond), func(e *model.Event) { e.Attempt, e.HasAttempt = 1<<40, true }),
			ev("c", model.BatchIdentified, model.Consumer, t0.Add(123*time.Millisecond), func(e *model.Event) { e.Rows, e.HasRows = -5, true }),
			ev("d", model.ConsumeSucceeded, model.Consumer, t0.Add(400*24*time.Hour), func(e *model.Event) { e.Rows, e.HasRows, e.Bytes, e.HasBytes = 0, true, -1, true }),
		}},
		{"strings shared, prefixed, long", []model.Event{
			ev("1", model.ArtifactStaged, model.Producer, t0, func(e *model.Event) { e.Object, e.Component = "snapshot_20260930.csv.tmp", long }),
			ev("2", model.ArtifactFinalized, model.Producer, t0.Add(time.Second), func(e *model.Event) { e.Object, e.Component = "snapshot_20260930.csv", long }),
			ev("3", model.SignalPublished, model.Producer, t0.Add(2*time.Second), func(e *model.Event) { e.Object, e.Error = "snapshot_20260930.flag", long }),
			ev("4", model.JobFailed, model.Operator, t0.Add(3*time.Second), func(e *model.Event) { e.Object, e.Error = "snap", long+"y" }),
			ev("5", model.ConsumeFailed, model.System("elsewhere"), t0.Add(4*time.Second), func(e *model.Event) { e.Error = "failed: ünïcode" }),
		}},
		{"a repeat beyond the window", many(200, func(i int, e *model.Event) { e.Object = fmt.Sprintf("file-%d", i%(tableWindow+10)) })},
		{"more components than the shared table takes", many(maxNames+100, func(i int, e *model.Event) { e.Component = fmt.Sprintf("runner-%d", i) })},
		{"redelivered with other contents", []model.Event{
			ev("x", model.JobSucceeded, model.Producer, t0.Add(time.Second), func(e *model.Event) { e.Component = "b" }),
			ev("x", model.JobSucceeded, model.Producer, t0, func(e *model.Event) { e.Component = "a" }),
		}},
	}
	asOf := date.In(time.UTC).Add(48 * time.Hour)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(Config{Contracts: noContracts{}})
			if err != nil {
				t.Fatal(err)
			}
			b := d.newBatch(tt.events[0].Key())
			for i := range tt.events {
				if !d.liveOf(b).Step(&tt.events[i]) {
					t.Fatalf("event %d not folded", i)
				}
			}
			c := contract.Default("p.daily")
			diagnosis := func() string {
				diag := d.thaw(b).Evaluate(c, asOf, replay.Context{})
				return string(diag.AppendJSON(nil))
			}
			want, wantDiag := eventsOf(d, b), diagnosis()
			n := b.len()
			d.freeze(b)
			if b.live != nil || b.cold == "" {
				t.Fatalf("after freeze: live %v, %d packed bytes", b.live != nil, len(b.cold))
			}
			if b.len() != n {
				t.Errorf("frozen: %d events, want %d", b.len(), n)
			}
			if got := eventsOf(d, b); !reflect.DeepEqual(got, want) {
				t.Errorf("thawed events differ:\n got %+v\nwant %+v", got, want)
			}
			if got := diagnosis(); got != wantDiag {
				t.Errorf("thawed diagnosis differs:\n got %s\nwant %s", got, wantDiag)
			}
			// Thawed for good and frozen again: the same bytes.
			cold := b.cold
			d.liveOf(b)
			d.freeze(b)
			if b.cold != cold {
				t.Errorf("frozen twice: %d bytes, then %d", len(cold), len(b.cold))
			}
		})
	}
}

// TestOpenSetSharedHash: two open batches whose keys share a hash slot
// are both found, and each is removed alone. The slot is taken by hand:
// 64-bit hashes of real keys do not collide in a test.
func TestOpenSetSharedHash(t *testing.T) {
	d, err := New(Config{Contracts: noContracts{}})
	if err != nil {
		t.Fatal(err)
	}
	date := model.MustParseDate("2026-09-30")
	k1 := model.BatchKey{Pipeline: "a.daily", BusinessDate: date, BatchID: "1"}
	k2 := model.BatchKey{Pipeline: "a.daily", BusinessDate: date, BatchID: "2"}
	b1 := d.newBatch(k1)
	// As if k2 hashed to b1's slot: newBatch must put b2 aside.
	d.open.m[d.open.hash(k2)] = b1
	b2 := d.newBatch(k2)
	if len(d.open.more) != 1 {
		t.Fatalf("%d keys aside, want 1", len(d.open.more))
	}
	if d.open.get(k1) != b1 || d.open.get(k2) != b2 {
		t.Fatalf("get: %p %p, want %p %p", d.open.get(k1), d.open.get(k2), b1, b2)
	}
	var all []*batch
	for b := range d.open.all() {
		all = append(all, b)
	}
	if !slices.Contains(all, b1) || !slices.Contains(all, b2) {
		t.Fatalf("all: %v, want both batches", all)
	}
	d.open.del(b2)
	if d.open.get(k2) != nil || d.open.get(k1) != b1 || len(d.open.more) != 0 {
		t.Fatalf("after removing the batch aside: get %p %p, %d aside", d.open.get(k1), d.open.get(k2), len(d.open.more))
	}
	d.open.put(b2)
	delete(d.open.m, d.open.hash(k2)) // the slot b1 took by hand
	d.open.del(b1)
	if d.open.get(k1) != nil || d.open.get(k2) != b2 || d.open.len() != 1 {
		t.Fatalf("after removing the first: get %p %p, %d open", d.open.get(k1), d.open.get(k2), d.open.len())
	}
}

// TestBatchSize: the batch struct is held once per open batch; a field
// more that takes it past 80 bytes costs 16 bytes a batch (the next size
// class), 16 MB a million batches.
func TestBatchSize(t *testing.T) {
	if n := unsafe.Sizeof(batch{}); n > 80 {
		t.Fatalf("batch is %d bytes, want at most 80", n)
	}
}

// FuzzFreeze: whatever the events of a batch hold (ids, checksums,
// objects, components and errors of any bytes, any times and numbers),
// freezing and thawing gives back the same events and the same bytes
// when frozen again.
func FuzzFreeze(f *testing.F) {
	f.Add("0f8e2a7c-1b3d-4e5f-8a9b-0c1d2e3f4a5b", "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "a.csv", "runner-1", "", int64(0), int64(100), uint8(3))
	f.Add("", "md5:abc", "snapshot_20260930.csv.tmp", "", "exit status 1", int64(-30*3600*1000), int64(-5), uint8(9))
	f.Add("x", "SHA256:", "ünïcode", "\x00\xff", "e", int64(400*24*3600*1000+123), int64(1)<<40, uint8(1))
	date := model.MustParseDate("2026-09-30")
	t0 := date.In(time.UTC).Add(17 * time.Hour)
	types := []model.EventType{model.JobStarted, model.ArtifactStaged, model.ArtifactFinalized, model.JobSucceeded,
		model.SignalPublished, model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified,
		model.ConsumeStarted, model.ConsumeSucceeded, model.JobFailed, model.ConsumeFailed}
	f.Fuzz(func(t *testing.T, id, checksum, object, component, errText string, offsetMs, n int64, count uint8) {
		d, err := New(Config{Contracts: noContracts{}})
		if err != nil {
			t.Fatal(err)
		}
		events := make([]model.Event, 0, int(count%16)+1)
		for i := range int(count%16) + 1 {
			e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%d", id, i), Type: types[i%len(types)], System: model.Producer,
				Time: t0.Add(time.Duration(offsetMs*int64(i+1)%(1<<40)) * time.Millisecond), Pipeline: "p.daily", BusinessDate: date, BatchID: "20260930",
				Object: object, Checksum: checksum, Component: component, Error: errText}
			if i%2 == 0 {
				e.Rows, e.HasRows, e.Bytes, e.HasBytes = n, true, -n, true
			}
			if i%3 == 0 {
				e.Attempt, e.HasAttempt = n>>(i%8), true
			}
			if i%4 == 1 {
				e.ID = id // the same id again: a redelivery
			}
			events = append(events, e)
		}
		b := d.newBatch(events[0].Key())
		for i := range events {
			d.liveOf(b).Step(&events[i])
		}
		want := eventsOf(d, b)
		d.freeze(b)
		if got := eventsOf(d, b); !reflect.DeepEqual(got, want) {
			t.Fatalf("thawed events differ:\n got %+v\nwant %+v", got, want)
		}
		cold := b.cold
		d.liveOf(b)
		d.freeze(b)
		if b.cold != cold {
			t.Fatalf("frozen twice: %d bytes, then %d", len(cold), len(b.cold))
		}
	})
}

package replay

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/handoff-dev/handoff/model"
)

// TestRecordSize pins the stored record's size: the detector's memory per
// open batch (docs/detect.md) is counted in it.
func TestRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(record{}); n != 56 {
		t.Fatalf("record is %d bytes, want 56: update docs/detect.md's memory figures if this is meant", n)
	}
}

// TestCompactStoresRepeatedNamesOnce: a batch repeats its file name,
// checksum and components across hops; after Compact each is in the arena
// once, and every record still reads its own.
func TestCompactStoresRepeatedNamesOnce(t *testing.T) {
	date := model.MustParseDate("2026-09-30")
	sum := "sha256:" + strings.Repeat("9f2c", 16)
	var s State
	for i, typ := range []model.EventType{model.ArtifactFinalized, model.ArtifactTransferred, model.ArtifactTransferred} {
		e := model.Event{Spec: model.SpecV1, ID: "event-" + string(rune('a'+i)), Type: typ,
			Time: date.In(time.UTC).Add(time.Duration(i) * time.Minute), Pipeline: "p", BusinessDate: date, BatchID: "20260930",
			System: model.Exchange, Component: "relay", Object: "snapshot_20260930.csv", Checksum: sum}
		s.Step(&e)
	}
	s.Compact()
	arena := string(s.arena)
	for _, name := range []string{sum, "snapshot_20260930.csv", "relay"} {
		if n := strings.Count(arena, name); n != 1 {
			t.Errorf("%q is %d times in the compacted arena, want once", name, n)
		}
	}
	for i := range s.records {
		r := &s.records[i]
		if got := s.str(r.strs[sChecksum]); got != sum {
			t.Errorf("record %d: checksum %q, want %q", i, got, sum)
		}
		if got, want := s.str(r.strs[sID]), "event-"+string(rune('a'+i)); got != want {
			t.Errorf("record %d: id %q, want %q", i, got, want)
		}
	}
	if cap(s.records) != len(s.records) || cap(s.arena) != len(s.arena) {
		t.Errorf("after Compact: %d/%d records, %d/%d arena bytes (len/cap): want no spare room",
			len(s.records), cap(s.records), len(s.arena), cap(s.arena))
	}
}

package gen_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/model"
)

// TestSameBytesAsBefore pins the output of the options deploy/bench/gen has
// always had: the MD5 of what the command wrote before the generator moved
// into this package (`gen -events 50000 -pipelines 7 -bad 0.01 -end
// 2026-05-01` and `gen -events 20000 -seed 3`). The benchmarks' files, and
// the figures measured on them, stay comparable.
func TestSameBytesAsBefore(t *testing.T) {
	for _, tt := range []struct {
		o    gen.Options
		want string
	}{
		{gen.Options{Events: 50_000, Seed: 1, Pipelines: 7, Bad: 0.01, End: date(t, "2026-05-01")}, "e0edb6d2f7ce6379ce17b050a358b1b1"},
		{gen.Options{Events: 20_000, Seed: 3, Bad: 0.001, End: date(t, "2026-09-30")}, "cc25f29c601141e864d81e99aa7a9cd3"},
	} {
		var b bytes.Buffer
		if _, err := gen.Write(&b, tt.o); err != nil {
			t.Fatal(err)
		}
		sum := md5.Sum(b.Bytes())
		if got := hex.EncodeToString(sum[:]); got != tt.want {
			t.Errorf("%+v: md5 %s, want %s", tt.o, got, tt.want)
		}
	}
}

func date(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSchedulesAndNeverProduced checks the options the equivalence test
// relies on: hourly pipelines get 24 batches a date named {yyyymmdd}{hh},
// weekday pipelines none on weekends, and a never-produced batch has no
// line at all.
func TestSchedulesAndNeverProduced(t *testing.T) {
	o := gen.Options{Seed: 5, End: date(t, "2026-09-30"), Days: 21, Pipelines: 3, NeverProduced: 0.05,
		Schedules: []gen.Schedule{gen.Hourly, gen.Daily, gen.Weekdays}, AllKinds: true}
	var b bytes.Buffer
	res, err := gen.Write(&b, o)
	if err != nil {
		t.Fatal(err)
	}
	// 21 dates: 24 hourly + 1 daily each, and 15 weekdays (3 full weeks).
	if want := 21*24 + 21 + 15; res.Batches != want {
		t.Errorf("%d batches, want %d", res.Batches, want)
	}
	if len(res.NeverProduced) == 0 {
		t.Fatal("no never-produced batch: the option did nothing")
	}
	keys := map[string]bool{}
	var dec model.Decoder
	for _, l := range bytes.Split(bytes.TrimSpace(b.Bytes()), []byte{'\n'}) {
		e, err := dec.Decode(l)
		if err != nil {
			t.Fatalf("line %s: %v (no bad lines asked for)", l, err)
		}
		if !e.Type.HasBatch() {
			continue
		}
		k := e.Key()
		keys[k.String()] = true
		switch {
		case strings.HasSuffix(k.Pipeline, ".hourly") && len(k.BatchID) != 10:
			t.Errorf("%s: an hourly batch id is {yyyymmdd}{hh}", k)
		case strings.HasSuffix(k.Pipeline, ".weekdays"):
			if wd := k.BusinessDate.In(time.UTC).Weekday(); wd == time.Saturday || wd == time.Sunday {
				t.Errorf("%s: a weekday pipeline's batch on a %s", k, wd)
			}
		}
	}
	for _, k := range res.NeverProduced {
		if keys[k] {
			t.Errorf("%s: never produced, yet it has events", k)
		}
	}
	if len(keys)+len(res.NeverProduced) != res.Batches {
		t.Errorf("%d batches with events + %d never produced, want %d", len(keys), len(res.NeverProduced), res.Batches)
	}
}

// TestReruns: with Reruns set, that fraction of the settled batches is
// re-run: the first attempt failed, sent nothing or was delivered with bad
// rows, and the date is delivered again under "{batch_id}-r2" (declared)
// or "{batch_id}-redo" (undeclared), with the date's file names.
func TestReruns(t *testing.T) {
	o := gen.Options{Seed: 9, End: date(t, "2026-09-30"), Days: 30, Pipelines: 3, Reruns: 0.08, Undeclared: 0.2,
		Schedules: []gen.Schedule{gen.Hourly, gen.Daily, gen.Weekdays}}
	var b bytes.Buffer
	res, err := gen.Write(&b, o)
	if err != nil {
		t.Fatal(err)
	}
	n := len(res.Reruns) + len(res.Undeclared)
	if n*100 < 5*res.Batches || len(res.Undeclared) == 0 {
		t.Fatalf("%d of %d batches re-run (%d undeclared): want at least 5%%, some undeclared", n, res.Batches, len(res.Undeclared))
	}
	ids := map[string]map[string]bool{} // scheduled key -> batch ids with events
	objects := map[string]bool{}
	var dec model.Decoder
	for _, l := range bytes.Split(bytes.TrimSpace(b.Bytes()), []byte{'\n'}) {
		e, err := dec.Decode(l)
		if err != nil || !e.Type.HasBatch() {
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(e.BatchID, "-r2"), "-redo")
		k := e.Pipeline + "/" + e.BusinessDate.String() + "/" + base
		if ids[k] == nil {
			ids[k] = map[string]bool{}
		}
		ids[k][e.BatchID] = true
		if e.BatchID != base && e.Object != "" && !strings.Contains(e.Object, base+".") {
			objects[e.Object] = true
		}
	}
	modes := map[string]int{}
	for _, set := range []struct {
		keys   []string
		suffix string
	}{{res.Reruns, "-r2"}, {res.Undeclared, "-redo"}} {
		for _, k := range set.keys {
			mode := res.FirstAttempt[k]
			modes[mode]++
			id := k[strings.LastIndexByte(k, '/')+1:]
			if !ids[k][id+set.suffix] {
				t.Errorf("%s: no re-run %s%s", k, id, set.suffix)
			}
			if ids[k][id] == (mode == "absent") {
				t.Errorf("%s: first attempt %s, yet events of %s: %v", k, mode, id, ids[k][id])
			}
		}
	}
	for _, m := range []string{"failed", "absent", "bad_rows"} {
		if modes[m] == 0 {
			t.Errorf("no first attempt %s (%v)", m, modes)
		}
	}
	if len(objects) > 0 {
		t.Errorf("re-runs with names not of their date: %v", objects)
	}
}

package replay_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// TestAppendJSONRoundTrips checks the hand-written encoder against
// encoding/json: its output is valid JSON that decodes back to the same
// diagnosis, for diagnoses of every shape the generator makes.
func TestAppendJSONRoundTrips(t *testing.T) {
	c := seedContract()
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		date := model.Date{Year: 2026, Month: 9, Day: 1 + int(seed%28)}
		d := replay.Replay(randomBatch(r, "p<&>\u2028", date), c, date.In(time.UTC).Add(50*time.Hour), replay.Context{})
		b := d.AppendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("seed %d: invalid JSON: %s", seed, b)
		}
		var back replay.Diagnosis
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(normalize(back), normalize(d)) {
			t.Fatalf("seed %d: round trip changed the diagnosis\nwant %+v\n got %+v", seed, d, back)
		}
		var m bytes.Buffer
		enc := json.NewEncoder(&m)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(d); err != nil || !bytes.Equal(bytes.TrimSpace(m.Bytes()), b) {
			t.Fatalf("seed %d: json.Encoder differs from AppendJSON (err %v)", seed, err)
		}
	}
}

// normalize makes times comparable after a round trip (locations differ)
// and empty slices equal to decoded empty slices.
func normalize(d replay.Diagnosis) replay.Diagnosis {
	fix := func(t time.Time) time.Time {
		if t.Year() == 1 {
			return time.Time{}
		}
		return t.UTC()
	}
	d.AsOf, d.FirstEventAt, d.LastEventAt = fix(d.AsOf), fix(d.FirstEventAt), fix(d.LastEventAt)
	bs := append([]replay.BoundaryState(nil), d.Boundaries...)
	for i := range bs {
		bs[i].At, bs[i].Due = fix(bs[i].At), fix(bs[i].Due)
	}
	d.Boundaries = bs
	return d
}

// TestAppendTimeMatchesTimeFormat checks the fast formatter against the
// standard library over a wide range of instants.
func TestAppendTimeMatchesTimeFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	lo := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()
	check := func(ms int64) {
		tm := time.UnixMilli(ms).UTC()
		d := replay.Diagnosis{AsOf: tm}
		b := d.AppendJSON(nil)
		want := `"as_of":"` + tm.Format(model.TimeLayout) + `"`
		if !bytes.Contains(b, []byte(want)) {
			t.Fatalf("%d: want %s in %s", ms, want, b)
		}
	}
	for _, ms := range []int64{0, -1, 86399999, 951782400000, 4107542400000, lo + 86400000, hi} {
		check(ms)
	}
	for i := 0; i < 100000; i++ {
		check(lo + r.Int64N(hi-lo))
	}
}

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

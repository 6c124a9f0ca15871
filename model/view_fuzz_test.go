package model_test

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/handoff-dev/handoff/model"
)

// FuzzDecodeView is the differential test of the ingest decoder: for any
// input, DecodeView accepts exactly what Decode accepts, rejects exactly
// what it rejects with the same *ValidationError (field, value, reason,
// kind: the dead-letter reason and text), and yields the same event, its
// attrs sorted as pairs. One Decoder decodes the previous input first, so
// a view or error still pointing into its buffers after the next call
// would show as a difference.
func FuzzDecodeView(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte(typicalEvent))
	}
	f.Fuzz(func(t *testing.T, data, prev []byte) {
		checkView(t, data, prev)
	})
}

// checkView compares DecodeView of data (after prev on the same Decoder)
// with Decode of data on a fresh one.
func checkView(t *testing.T, data, prev []byte) {
	t.Helper()
	want, wantErr := model.Decode(data)
	var d model.Decoder
	_, _ = d.DecodeView(prev)
	v, err := d.DecodeView(data)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("DecodeView error %v, Decode error %v\ninput: %q", err, wantErr, data)
	}
	if err != nil {
		// Another decode on the same Decoder must not change the error.
		_, _ = d.DecodeView([]byte(typicalEvent))
		ve, ok := err.(*model.ValidationError)
		if !ok {
			t.Fatalf("DecodeView error %T is not a *ValidationError: %v", err, err)
		}
		if !reflect.DeepEqual(ve, wantErr) || ve.Error() != wantErr.Error() {
			t.Fatalf("DecodeView error %#v, Decode error %#v\ninput: %q", ve, wantErr, data)
		}
		return
	}
	got := v.Event
	if got.Attrs != nil {
		t.Fatalf("DecodeView set Event.Attrs %v; want the pairs only", got.Attrs)
	}
	if !slices.IsSorted(v.AttrKeys) || len(v.AttrKeys) != len(v.AttrValues) {
		t.Fatalf("attrs pairs not sorted or unequal lengths: %q %q", v.AttrKeys, v.AttrValues)
	}
	if len(v.AttrKeys) > 0 {
		got.Attrs = make(map[string]string, len(v.AttrKeys))
		for i, k := range v.AttrKeys {
			got.Attrs[k] = v.AttrValues[i]
		}
		if len(got.Attrs) != len(v.AttrKeys) {
			t.Fatalf("duplicate attr keys in the view: %q", v.AttrKeys)
		}
	}
	if diff := diffEvents(got, want); diff != "" {
		t.Fatalf("DecodeView and Decode differ: %s\ninput: %q", diff, data)
	}
	if !slices.Equal(v.AttrKeys, slices.Sorted(maps.Keys(want.Attrs))) {
		t.Fatalf("attr keys %q, want %q", v.AttrKeys, slices.Sorted(maps.Keys(want.Attrs)))
	}
}

// TestDecodeViewCases runs the differential check over the decoder's
// tables of valid and invalid messages, and over attrs at and past the
// caps (many keys take the map path of the duplicate check).
func TestDecodeViewCases(t *testing.T) {
	var many, manyDup, manyExtra []byte
	many = []byte(`{"spec":"handoff/v1","event_id":"e","type":"job.started","time":"2026-10-01T01:00:00Z","pipeline":"p","business_date":"2026-09-30","batch_id":"b","system":"producer","attrs":{`)
	for i := 0; i < 40; i++ {
		if i > 0 {
			many = append(many, ',')
		}
		many = append(many, `"k`+string(rune('A'+i))+`":`+string(rune('0'+i%10))...)
	}
	manyDup = append(append([]byte(nil), many...), `,"kC":1}}`...)
	manyExtra = append(append([]byte(nil), many...), `},"kD":"top","zz":[1,{"a":null}]}`...)
	many = append(many, `}}`...)
	cases := [][]byte{many, manyDup, manyExtra,
		msg("attrs", `{"b":"2","a":1,"c":{"x":[true,null]}}`, "zextra", `"v"`, "b", `"dropped: attrs has b"`),
		msg("attrs", `{"a":"1","a":"2"}`),
		msg("attrs", `{"a":1e}`),
		msg("x", `01`),
		msg("attrs", `{"a":"1"}`, "a", `+1`),
		msg("type", `"job.unknown"`),
		msg("pipeline", `"a/b"`),
		msg("event_id", `"`+string(make([]byte, 300))+`"`),
	}
	for _, s := range fuzzSeeds {
		cases = append(cases, []byte(s))
	}
	for _, c := range cases {
		checkView(t, c, []byte(typicalEvent))
		checkView(t, c, c)
	}
}

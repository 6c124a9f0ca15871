package model_test

import (
	"testing"

	"github.com/handoff-dev/handoff/model"
)

// FuzzDecode checks that Decode never panics, and that whatever it accepts
// survives the canonical encoding unchanged: ingest re-encodes events, so
// an event that changes on the way through would change its own evidence.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := model.Decode(data)
		if err != nil {
			if _, ok := err.(*model.ValidationError); !ok {
				t.Fatalf("Decode error %T is not a *ValidationError: %v", err, err)
			}
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("Decode accepted an event that Validate rejects: %v\ninput: %q", err, data)
		}
		enc := e.AppendJSON(nil)
		e2, err := model.Decode(enc)
		if err != nil {
			t.Fatalf("decoding the canonical encoding: %v\ninput:     %q\nencoding: %s", err, data, enc)
		}
		if diff := diffEvents(e, e2); diff != "" {
			t.Fatalf("round trip changed the event: %s\ninput:    %q\nencoding: %s", diff, data, enc)
		}
	})
}

var fuzzSeeds = []string{
	typicalEvent,
	`{"spec":"handoff/v1","event_id":"h1","type":"process.heartbeat","time":"2026-10-01T01:00:00Z","pipeline":"p","system":"consumer","component":"c1"}`,
	`{"spec":"handoff/v1","event_id":"e1","type":"job.succeeded","time":"2026-10-01T01:00:00.123456+08:00","pipeline":"p","business_date":"2026-09-30","batch_id":"20260930","system":"producer"}`,
	`{"spec":"handoff/v1","event_id":"e2","type":"consume.failed","time":"2026-10-01T01:00:00Z","pipeline":"p","business_date":"2026-09-30","batch_id":"b","system":"consumer","error":"boom\n\"quoted\"","attrs":{"n":1,"o":{"k":[1,"x",null,true]},"s":"v"},"extra":{"a":1e3}}`,
	`{"spec":"handoff/v1","event_id":"e3","type":"artifact.finalized","time":"2026-10-01T01:00:00Z","pipeline":"p","business_date":"2026-09-30","batch_id":"b","system":"producer","object":"f.csv","rows":0,"bytes":null,"attempt":2,"attrs":null}`,
	`{"spec":"handoff/v1","event_id":"e4","type":"job.started","time":"2026-10-01T01:00:00Z","pipeline":"p","business_date":"2026-13-01","batch_id":"b","system":"producer"}`,
	`{"spec":"handoff/v1","event_id":"e5","type":"job.exploded"}`,
	`{"spec":"handoff/v1","event_id":"e6","type":"job.started","time":"9999-12-31T23:59:59-01:00","pipeline":"p","business_date":"2026-09-30","batch_id":"b","system":"producer"}`,
	`{"spec":"handoff/v1","event_id":"\u00e9\ud83d\ude00","type":"job.started","time":"2026-10-01T01:00:00Z","pipeline":"p","business_date":"2026-09-30","batch_id":"b","system":"producer","attrs":{"\u0001":"\u0000"}}`,
	"{\"spec\":\"handoff/v1\",\"event_id\":\"e7\",\"type\":\"job.started\",\"time\":\"2026-10-01T01:00:00Z\",\"pipeline\":\"p\",\"business_date\":\"2026-09-30\",\"batch_id\":\"b\",\"system\":\"producer\",\"attrs\":{\"a\":\"\xff\",\"b\":[\"\xff\x01\",{\"\xfe\":-0.5e+3}]},\"k\xff\":\"v\"}",
	`{"rows":+5,"bytes":05,"x":nan,"y":1.}`,
	`[1,2,3]`,
	`"x"`,
	`{`,
	``,
	`{"rows":-1}`,
	`{"rows":1.5,"bytes":"7","attempt":99999999999999999999}`,
	// Strictness: raw control characters in strings, lone surrogates, bad
	// escapes, duplicate keys, and dates and times ClickHouse cannot store.
	"{\"spec\":\"handoff/v1\",\"event_id\":\"e8\",\"type\":\"job.started\",\"time\":\"2026-10-01T01:00:00Z\",\"pipeline\":\"p\",\"business_date\":\"2026-09-30\",\"batch_id\":\"b\",\"system\":\"producer\",\"error\":\"a\x00b\",\"attrs\":{\"k\":\"\t\"}}",
	"{\n\t\"spec\": \"handoff/v1\",\r\n\"x\": \"\x1f\"}",
	`{"spec":"handoff/v1","event_id":"e9","type":"job.started","time":"2026-10-01T01:00:00Z","pipeline":"p","business_date":"2026-09-30","batch_id":"b","system":"producer","object":"\ud800x","attrs":{"a":"\udc00","b":"\ud83d\ude00","c":"\\ud800"}}`,
	`{"object":"\q","error":"\u12"}`,
	`{"spec":"handoff/v1","event_id":"e10","type":"job.started","time":"2026-10-01T01:00:00Z","pipeline":"p","business_date":"2026-09-30","batch_id":"b","batch_id":"c","system":"producer"}`,
	`{"spec":"handoff/v1","event_id":"e11","type":"job.started","time":"2026-10-01T01:00:00Z","pipeline":"p","business_date":"2026-09-30","batch_id":"b","system":"producer","x":null,"x":1,"attrs":{"k":1,"k":2}}`,
	`{"spec":"handoff/v1","event_id":"e12","type":"job.started","time":"0001-01-01T00:00:00Z","pipeline":"p","business_date":"1970-01-01","batch_id":"b","system":"producer"}`,
	`{"spec":"handoff/v1","event_id":"e13","type":"job.started","time":"2105-12-31T23:59:59.999Z","pipeline":"p","business_date":"2105-12-31","batch_id":"b","system":"producer"}`,
	`{"spec":"handoff/v1","event_id":"e14","type":"job.started","time":"2106-01-01T00:00:00Z","pipeline":"p","business_date":"2150-06-01","batch_id":"b","system":"producer"}`,
}

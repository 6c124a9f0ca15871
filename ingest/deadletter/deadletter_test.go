package deadletter

import (
	"bytes"
	"testing"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

func TestMessages(t *testing.T) {
	big := bytes.Repeat([]byte("x"), maxValue+10)
	tests := []struct {
		name      string
		in        schema.DeadLetter
		wantKey   []byte // nil: no key
		wantValue []byte
		truncated bool
	}{
		{"plain", schema.DeadLetter{ReceivedMS: 1700000000123, Source: schema.Source{Topic: "handoff.findings", Partition: 2, Offset: 41},
			Key: "p/2026-09-30/20260930", Reason: model.RejectBadValue, Error: `state "firing": want open or resolved`, Payload: []byte(`{"state":"firing"}`)},
			[]byte("p/2026-09-30/20260930"), []byte(`{"state":"firing"}`), false},
		{"empty value stays a value", schema.DeadLetter{Reason: model.RejectBadJSON, Error: "not a JSON object"}, nil, []byte{}, false},
		{"oversized is cut and marked", schema.DeadLetter{Reason: model.RejectTooLarge, Error: "too large", Payload: big}, nil, big[:maxValue], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Messages([]schema.DeadLetter{tt.in})[0]
			if !bytes.Equal(m.Key, tt.wantKey) || (m.Key == nil) != (tt.wantKey == nil) {
				t.Errorf("key %q, want %q", m.Key, tt.wantKey)
			}
			if m.Value == nil || !bytes.Equal(m.Value, tt.wantValue) {
				t.Errorf("value of %d bytes (nil: %v), want %d bytes", len(m.Value), m.Value == nil, len(tt.wantValue))
			}
			h := map[string]string{}
			for _, x := range m.Headers {
				h[x.Key] = string(x.Value)
			}
			want := map[string]string{
				HeaderReason: string(tt.in.Reason), HeaderError: tt.in.Error, HeaderSourceTopic: tt.in.Source.Topic,
			}
			if tt.name == "plain" {
				want[HeaderSourcePartition], want[HeaderSourceOffset], want[HeaderReceivedMS] = "2", "41", "1700000000123"
			}
			for k, v := range want {
				if h[k] != v {
					t.Errorf("header %s = %q, want %q", k, h[k], v)
				}
			}
			if (h[HeaderTruncated] == "true") != tt.truncated {
				t.Errorf("header %s = %q, want truncated %v", HeaderTruncated, h[HeaderTruncated], tt.truncated)
			}
		})
	}
}

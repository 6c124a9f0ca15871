package topics

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  string // "" when valid
	}{
		{"handoff.events", ""},
		{"a-b_C.9", ""},
		{strings.Repeat("x", 249), ""},
		{"", "empty"},
		{".", "not allowed"},
		{"..", "not allowed"},
		{strings.Repeat("x", 250), "at most 249"},
		{"bad topic", `character ' ' at 4`},
		{"ünï", "only letters"},
		{"a/b", `'/'`},
	} {
		err := CheckName(tt.name)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckName(%q) = %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestCheckBrokers(t *testing.T) {
	for _, tt := range []struct {
		brokers []string
		err     string
	}{
		{[]string{"127.0.0.1:9092", "kafka-1:19092", "[::1]:9092"}, ""},
		{nil, "no Kafka brokers"},
		{[]string{"127.0.0.1:99999"}, `port "99999": want a number from 1 to 65535`},
		{[]string{"127.0.0.1:0"}, `port "0"`},
		{[]string{"127.0.0.1"}, "want host:port"},
		{[]string{":9092"}, "no host"},
		{[]string{"ok:1", "h:x"}, `"h:x"`},
	} {
		err := CheckBrokers(tt.brokers)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckBrokers(%q) = %v, want %q", tt.brokers, err, tt.err)
		}
	}
}

package contract_test

import (
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model/contract"
)

// TestForKey reads the contract's hold before paging: a duration from 0
// (page at once, whatever notify's hold for the severity) to a day; absent,
// HasFor is false and notify's hold for the severity applies.
func TestForKey(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		hasFor bool
		err    string
	}{
		{"for: 10m", 10 * time.Minute, true, ""},
		{"for: 0s", 0, true, ""},
		{"for: 24h", 24 * time.Hour, true, ""},
		{"owner: x", 0, false, ""},
		{"for: -1m", 0, false, `c.yaml:2: for: "-1m": want 0 to 24h0m0s`},
		{"for: 25h", 0, false, `c.yaml:2: for: "25h": want 0 to 24h0m0s`},
		{"for: soon", 0, false, `c.yaml:2: for: "soon": want a Go duration such as 10m or 90s`},
		{"for: [1m]", 0, false, "c.yaml:2: for: want a string"},
	}
	for _, tt := range tests {
		c, err := contract.Parse("c.yaml", []byte("pipeline: p\n"+tt.in+"\n"))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if c.For != tt.want || c.HasFor != tt.hasFor {
			t.Errorf("%s: For %v HasFor %v, want %v %v", tt.in, c.For, c.HasFor, tt.want, tt.hasFor)
		}
	}
}

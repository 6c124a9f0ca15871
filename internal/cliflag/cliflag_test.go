package cliflag_test

import (
	"flag"
	"reflect"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/internal/cliflag"
)

func TestList(t *testing.T) {
	var got []string
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Var(cliflag.List{P: &got}, "brokers", "")
	if err := fs.Parse([]string{"--brokers", " a:1, ,b:2 ,"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a:1", "b:2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if s := (cliflag.List{P: &got}).String(); s != "a:1,b:2" {
		t.Fatalf("String() = %q", s)
	}
	if s := (cliflag.List{}).String(); s != "" {
		t.Fatalf("zero List String() = %q", s)
	}
}

// TestSecretNeverPrinted: a secret taken from the environment as the
// flag's default must not appear in -h, nor in the usage printed when
// another flag is mistyped.
func TestSecretNeverPrinted(t *testing.T) {
	const secret = "s3cr3t-value"
	for _, args := range [][]string{{"-h"}, {"--no-such-flag"}, {"--password"}} {
		v := secret
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		var out strings.Builder
		fs.SetOutput(&out)
		fs.Var(cliflag.Secret{P: &v}, "password", "a password (ENV_PASSWORD)")
		if err := fs.Parse(args); err == nil {
			t.Fatalf("%q: parse succeeded", args)
		}
		if strings.Contains(out.String(), secret) {
			t.Errorf("%q printed the secret:\n%s", args, out.String())
		}
		if !strings.Contains(out.String(), "-password") {
			t.Errorf("%q: usage lacks the flag:\n%s", args, out.String())
		}
	}
	v := secret
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Var(cliflag.Secret{P: &v}, "password", "")
	if err := fs.Parse([]string{"--password", "other"}); err != nil || v != "other" {
		t.Fatalf("Set: err %v, value %q", err, v)
	}
}

// TestParseTime: every time flag is range-checked; 0001-01-01 (which made
// detect --now overflow to 1734) and 9999-12-31 are refused, naming the
// flag.
func TestParseTime(t *testing.T) {
	for _, tt := range []struct {
		in, err string
	}{
		{"2026-10-03T00:00:00Z", ""},
		{"2026-10-03T08:00:00+08:00", ""},
		{"1970-01-01T00:00:00Z", ""},
		{"0001-01-01T00:00:00Z", "out of range"},
		{"1969-12-31T23:59:59Z", "out of range"},
		{"9999-12-31T23:59:59Z", "out of range"},
		{"2200-01-01T00:00:00Z", "out of range"},
		{"yesterday", "want an RFC 3339 time"},
		{"", "want an RFC 3339 time"},
	} {
		got, err := cliflag.ParseTime("now", tt.in)
		if (err == nil) != (tt.err == "") || (err != nil && (!strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "--now"))) {
			t.Errorf("ParseTime(%q) = %v, %v; want error with %q", tt.in, got, err, tt.err)
		}
	}
}

package cliflag_test

import (
	"flag"
	"reflect"
	"testing"
	"time"

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

func TestZone(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{"", "", false},
		{"local", "local", false},
		{"Local", "local", false},
		{"Asia/Shanghai", "Asia/Shanghai", false},
		{" UTC ", "UTC", false},
		{"Mars/Olympus", "", true},
	} {
		var loc *time.Location
		err := (cliflag.Zone{P: &loc}).Set(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("Set(%q): error %v, want error %t", tc.in, err, tc.bad)
			continue
		}
		if got := (cliflag.Zone{P: &loc}).String(); !tc.bad && got != tc.want {
			t.Errorf("Set(%q): String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

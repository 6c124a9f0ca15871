package cliflag_test

import (
	"flag"
	"reflect"
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

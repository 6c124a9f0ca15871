package backfill

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// TestAbsent: the pipelines named on the command line that the census of
// the range does not list are the ones Run refuses, each named once.
func TestAbsent(t *testing.T) {
	census := []history.PipelineRows{{Pipeline: "a"}, {Pipeline: "b"}}
	for _, tt := range []struct {
		named []string
		want  []string
	}{
		{nil, nil},
		{[]string{"a", "b"}, nil},
		{[]string{"a", "nope"}, []string{"nope"}},
		{[]string{"nope", "x", "nope"}, []string{"nope", "x"}},
	} {
		if got := absent(tt.named, census); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("absent(%q) = %q, want %q", tt.named, got, tt.want)
		}
	}
}

// TestRunRefusesNamedPipelineWithoutEvents: of the pipelines named, those
// with no batch event in the range make Run fail before anything is
// folded, naming them, instead of dropping them from the summary.
func TestRunRefusesNamedPipelineWithoutEvents(t *testing.T) {
	for _, tt := range []struct {
		named   []string
		missing []string
	}{
		{[]string{"p00", "nope"}, []string{"nope"}},
		{[]string{"nope"}, []string{"nope"}},
		{[]string{"p01"}, nil},
	} {
		r := &memReader{events: genHistory(2, 5)}
		cfg := Config{From: model.MustParseDate("2026-09-01"), To: model.MustParseDate("2026-09-05"), AsOf: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
			Contracts: noContracts{}, Pipelines: tt.named}
		folded := 0
		_, err := Run(context.Background(), r, cfg, Hooks{Chunk: func(c *Chunk) error { folded += c.Len(); return nil }})
		var ne *NoEventsError
		switch {
		case tt.missing == nil && err != nil:
			t.Errorf("%q: %v", tt.named, err)
		case tt.missing != nil && (!errors.As(err, &ne) || !reflect.DeepEqual(ne.Pipelines, tt.missing) || folded != 0):
			t.Errorf("%q: err %v, %d folded; want NoEventsError naming %q and nothing folded", tt.named, err, folded, tt.missing)
		}
	}
}

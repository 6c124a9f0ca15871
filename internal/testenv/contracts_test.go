package testenv

import (
	"slices"
	"testing"
)

// TestContracts: every file of every map is loaded, and a later map's file
// of the same name replaces the earlier one.
func TestContracts(t *testing.T) {
	set := Contracts(t,
		map[string]string{"a.yaml": "pipeline: a.daily\n", "b.yaml": "pipeline: b.daily\n"},
		map[string]string{"b.yaml": "pipeline: b.hourly\nschedule: hourly\nbatch_id: \"{yyyymmdd}{hh}\"\n"})
	if got, want := set.Pipelines(), []string{"a.daily", "b.hourly"}; !slices.Equal(got, want) {
		t.Errorf("pipelines %v, want %v", got, want)
	}
}

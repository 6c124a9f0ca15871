package model_test

import (
	"testing"

	"github.com/handoff-dev/handoff/model"
)

func TestDerivedEventID(t *testing.T) {
	id := model.DerivedEventID("p/2026-09-30/1", "signal.restored", "x.flag", "")
	if len(id) != 36 || id[14] != '8' || (id[19] != '8' && id[19] != '9' && id[19] != 'a' && id[19] != 'b') {
		t.Fatalf("%s is not a version 8 UUID", id)
	}
	if again := model.DerivedEventID("p/2026-09-30/1", "signal.restored", "x.flag", ""); again != id {
		t.Fatalf("same parts, ids %s and %s", id, again)
	}
	for _, other := range [][]string{
		{"p/2026-09-30/1", "signal.restored", "x.flag", "a"},
		{"p/2026-09-30/1", "signal.restored", "x.fla", "g"},
		{"p/2026-09-30/1", "signal.transferred", "x.flag", ""},
	} {
		if model.DerivedEventID(other...) == id {
			t.Errorf("parts %q give the same id", other)
		}
	}
}

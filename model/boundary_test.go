package model_test

import (
	"encoding/json"
	"testing"

	"github.com/handoff-dev/handoff/model"
)

func TestHypothesisExcludedBy(t *testing.T) {
	// The exclusion table of docs/diagnosis.md: each hypothesis is excluded by an
	// event proving its data boundary or a later one on the data path;
	// signals (3, 5) exclude nothing.
	tests := []struct {
		h        model.Hypothesis
		excluded []model.Boundary
	}{
		{model.NotProduced, []model.Boundary{1, 2, 4, 6, 7}},
		{model.NotFinal, []model.Boundary{2, 4, 6, 7}},
		{model.NotTransferred, []model.Boundary{4, 6, 7}},
		{model.NotIdentified, []model.Boundary{6, 7}},
		{model.NotConsumed, []model.Boundary{7}},
		{model.Delivered, nil},
	}
	for _, tt := range tests {
		want := map[model.Boundary]bool{}
		for _, b := range tt.excluded {
			want[b] = true
		}
		for b := model.NoBoundary; b <= model.Consumed+1; b++ {
			if got := tt.h.ExcludedBy(b); got != want[b] {
				t.Errorf("%s.ExcludedBy(%s) = %v, want %v", tt.h, b, got, want[b])
			}
		}
	}
}

func TestHypothesisBoundary(t *testing.T) {
	want := map[model.Hypothesis]model.Boundary{
		model.NotProduced:    model.Produced,
		model.NotFinal:       model.Finalized,
		model.NotTransferred: model.Transferred,
		model.NotIdentified:  model.Identified,
		model.NotConsumed:    model.Consumed,
		model.Delivered:      model.NoBoundary,
	}
	for h, b := range want {
		if got := h.Boundary(); got != b {
			t.Errorf("%s.Boundary() = %s, want %s", h, got, b)
		}
	}
	if len(model.Hypotheses) != 5 {
		t.Errorf("len(Hypotheses) = %d, want 5", len(model.Hypotheses))
	}
}

func TestBoundaryNames(t *testing.T) {
	names := []string{"produced", "finalized", "signaled", "transferred", "signal_delivered", "identified", "consumed"}
	if len(model.Ladder) != len(names) {
		t.Fatalf("len(Ladder) = %d, want %d", len(model.Ladder), len(names))
	}
	for i, name := range names {
		b := model.Ladder[i]
		if int(b) != i+1 {
			t.Errorf("Ladder[%d] = %d, want %d", i, b, i+1)
		}
		if b.String() != name {
			t.Errorf("Ladder[%d].String() = %q, want %q", i, b, name)
		}
		got, err := model.ParseBoundary(name)
		if err != nil || got != b {
			t.Errorf("ParseBoundary(%q) = %v, %v; want %v", name, got, err, b)
		}
	}
	for _, bad := range []string{"", "Produced", "delivered", "signal-delivered"} {
		if _, err := model.ParseBoundary(bad); err == nil {
			t.Errorf("ParseBoundary(%q): got nil error", bad)
		}
	}
	if got := model.Boundary(9).String(); got != "boundary(9)" {
		t.Errorf("Boundary(9).String() = %q", got)
	}
	if got := model.NoBoundary.String(); got != "" {
		t.Errorf("NoBoundary.String() = %q, want empty", got)
	}
}

func TestBoundaryPredicates(t *testing.T) {
	tests := []struct {
		b             model.Boundary
		valid, onPath bool
	}{
		{model.NoBoundary, false, false},
		{model.Produced, true, true},
		{model.Finalized, true, true},
		{model.Signaled, true, false},
		{model.Transferred, true, true},
		{model.SignalDelivered, true, false},
		{model.Identified, true, true},
		{model.Consumed, true, true},
		{model.Consumed + 1, false, false},
		{-1, false, false},
	}
	for _, tt := range tests {
		if got := tt.b.Valid(); got != tt.valid {
			t.Errorf("%s.Valid() = %v, want %v", tt.b, got, tt.valid)
		}
		if got := tt.b.OnDataPath(); got != tt.onPath {
			t.Errorf("%s.OnDataPath() = %v, want %v", tt.b, got, tt.onPath)
		}
	}
}

func TestBoundarySet(t *testing.T) {
	all := model.AllBoundaries
	if got := all.List(); len(got) != 7 {
		t.Errorf("AllBoundaries.List() = %v, want all seven", got)
	}
	noExchange := all.Without(model.Transferred).Without(model.SignalDelivered)
	want := []model.Boundary{model.Produced, model.Finalized, model.Signaled, model.Identified, model.Consumed}
	got := noExchange.List()
	if len(got) != len(want) {
		t.Fatalf("List() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("List()[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	if noExchange.Has(model.Transferred) || !noExchange.Has(model.Identified) {
		t.Error("Has is wrong after Without")
	}
	if noExchange.With(model.Transferred).With(model.SignalDelivered) != all {
		t.Error("With does not undo Without")
	}
	var empty model.BoundarySet
	if empty.Has(model.NoBoundary) || all.Has(model.NoBoundary) || len(empty.List()) != 0 {
		t.Error("NoBoundary or the empty set misbehaves")
	}
}

func TestHypothesisNames(t *testing.T) {
	names := []string{"not_produced", "not_final", "not_transferred", "not_identified", "not_consumed", "delivered"}
	for i, name := range names {
		h := model.Hypothesis(i)
		if h.String() != name {
			t.Errorf("Hypothesis(%d).String() = %q, want %q", i, h, name)
		}
		got, err := model.ParseHypothesis(name)
		if err != nil || got != h {
			t.Errorf("ParseHypothesis(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := model.ParseHypothesis("broken"); err == nil {
		t.Error("ParseHypothesis(\"broken\"): got nil error")
	}
	if got := model.Hypothesis(7).String(); got != "hypothesis(7)" {
		t.Errorf("Hypothesis(7).String() = %q", got)
	}
}

// TestHypothesisText pins the JSON form of a verdict to its name, the wire
// format of docs/diagnosis.md, in both directions.
func TestHypothesisText(t *testing.T) {
	b, err := json.Marshal(struct {
		V model.Hypothesis `json:"verdict"`
	}{model.NotIdentified})
	if err != nil || string(b) != `{"verdict":"not_identified"}` {
		t.Errorf("json.Marshal(NotIdentified) = %s, %v; want {\"verdict\":\"not_identified\"}", b, err)
	}
	var back struct {
		V model.Hypothesis `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(`{"verdict":"delivered"}`), &back); err != nil || back.V != model.Delivered {
		t.Errorf("json.Unmarshal(delivered) = %v, %v; want delivered", back.V, err)
	}
	if err := json.Unmarshal([]byte(`{"verdict":"broken"}`), &back); err == nil {
		t.Error(`json.Unmarshal("broken"): got nil error, want unknown verdict`)
	}
	if _, err := model.Hypothesis(9).MarshalText(); err == nil {
		t.Error("Hypothesis(9).MarshalText: got nil error")
	}
}

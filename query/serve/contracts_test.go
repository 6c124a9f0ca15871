package serve

import (
	"os"
	"reflect"
	"testing"

	"github.com/handoff-dev/handoff/model/contract"
)

// TestContractMemo: the memo gives the contract s.contracts gives, a
// file's the same value, the default one equal to a fresh default; it
// keeps what it looked up before freeze, and nothing after.
func TestContractMemo(t *testing.T) {
	cs, err := contract.LoadFS(os.DirFS("../../deploy"), "contracts")
	if err != nil {
		t.Fatal(err)
	}
	const (
		filed   = "account-balance-snapshot.daily"
		unfiled = "no.such.contract"
		late    = "met.after.freeze"
	)
	m := newContractMemo(cs)
	tests := []struct {
		pipeline string
		same     bool // the very value cs.For gives
	}{
		{filed, true}, {unfiled, false}, {filed, true}, {unfiled, false},
	}
	first := map[string]*contract.Contract{}
	for _, tt := range tests {
		got := m.For(tt.pipeline)
		if want := cs.For(tt.pipeline); !reflect.DeepEqual(got, want) || (tt.same && got != want) {
			t.Errorf("%s: memo gives %+v, contracts %+v", tt.pipeline, got, want)
		}
		if p, ok := first[tt.pipeline]; ok && p != got {
			t.Errorf("%s: a second look-up gave another contract", tt.pipeline)
		}
		first[tt.pipeline] = got
	}
	m.freeze()
	if got := m.For(late); !reflect.DeepEqual(got, cs.For(late)) || got.Pipeline != late {
		t.Errorf("%s after freeze: %+v", late, got)
	}
	if _, kept := m.m[late]; kept || len(m.m) != 2 {
		t.Errorf("after freeze the memo holds %d pipelines (%s kept: %t), want the 2 met before", len(m.m), late, kept)
	}
	if m.For(unfiled) != first[unfiled] {
		t.Errorf("%s after freeze: not the contract kept", unfiled)
	}
}

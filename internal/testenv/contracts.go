package testenv

import (
	"testing"
	"testing/fstest"

	"github.com/handoff-dev/handoff/model/contract"
)

// Contracts loads contract files given as text (file name to YAML; a later
// map wins for a name in two) the way handoff loads a directory of them
// (contract.LoadFS), and fails tb with the loader's error: a fixture's
// contracts that do not load are the test's mistake.
func Contracts(tb testing.TB, files ...map[string]string) *contract.Set {
	tb.Helper()
	fsys := fstest.MapFS{}
	for _, m := range files {
		for name, text := range m {
			fsys["contracts/"+name] = &fstest.MapFile{Data: []byte(text)}
		}
	}
	set, err := contract.LoadFS(fsys, "contracts")
	if err != nil {
		tb.Fatalf("the test's contracts: %v", err)
	}
	return set
}

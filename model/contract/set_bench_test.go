package contract_test

import (
	"fmt"
	"testing"

	"github.com/handoff-dev/handoff/model/contract"
)

// sink keeps what For returns from the stack, as a caller's does.
var sink *contract.Contract

// A page of every pipeline asks For of each of 10,000 pipelines without
// a contract, in runs of one pipeline (the events of a batch), from the
// fold and the diagnoses at once.
func BenchmarkSetForDefault(b *testing.B) {
	s, err := contract.NewSet(named("p", "p.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf("bench.p%04d.daily", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink = s.For(names[i%len(names)])
	}
}

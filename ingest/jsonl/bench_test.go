package jsonl_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/model"
)

// benchInput returns n event lines shaped like the generator's
// (deploy/bench/gen): about 300 bytes each, a batch's ladder of events.
func benchInput(n int) []byte {
	types := []struct{ typ, system, extra string }{
		{"job.started", "producer", `,"attempt":1`},
		{"artifact.staged", "producer", `,"object":"pipeline_007_20260930.csv.tmp"`},
		{"artifact.finalized", "producer", `,"object":"pipeline_007_20260930.csv","rows":120345,"bytes":9876543,"checksum":"sha256:9f2c5a11d00dfeed"`},
		{"job.succeeded", "producer", `,"attempt":1`},
		{"signal.published", "producer", `,"object":"pipeline_007_20260930.flag","rows":120345`},
		{"artifact.transferred", "exchange", `,"object":"pipeline_007_20260930.csv","rows":120345,"bytes":9876543,"checksum":"sha256:9f2c5a11d00dfeed","attrs":{"location":"/inbox/finance"}`},
		{"consume.succeeded", "consumer", `,"rows":120345,"attempt":1`},
	}
	var b bytes.Buffer
	for i := range n {
		t := types[i%len(types)]
		fmt.Fprintf(&b, `{"spec":"handoff/v1","event_id":"pipeline-007.daily-20260930-%07d","type":%q,"time":"2026-10-01T01:%02d:%02d.120Z","pipeline":"pipeline-007.daily","business_date":"2026-09-30","batch_id":"20260930","system":%q,"component":"runner-3"%s}`+"\n",
			i, t.typ, i/60%60, i%60, t.system, t.extra)
	}
	return b.Bytes()
}

func BenchmarkRead(b *testing.B) {
	data := benchInput(100_000)
	for _, workers := range []int{1, 0} {
		name := fmt.Sprintf("workers=%d", workers)
		if workers == 0 {
			name = "workers=GOMAXPROCS"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				st, err := jsonl.Read(context.Background(), bytes.NewReader(data), jsonl.Options{Workers: workers}, func(int, *model.Event, error) error { return nil })
				if err != nil || st.Events != 100_000 {
					b.Fatal(st, err)
				}
			}
			b.ReportMetric(float64(100_000*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

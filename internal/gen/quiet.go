package gen

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// QuietBatches makes the wire JSON of typical open batches, the ones the
// detector's memory figures are of (`go test -bench OpenBatchMemory
// ./analyzer/detect/` and `MODE=memory deploy/bench/detect.sh` fold the
// same batches): 6 to 9 events each, stalled somewhere between the staged
// file and the consume attempt, with UUID-sized event ids, file names and
// sha256 checksums, over 100 pipelines, all on 2026-09-30 from 17:00Z.
// The same sequence every time.
type QuietBatches struct {
	r *rand.Rand
	// Events counts the events made so far.
	Events int
}

// NewQuietBatches returns a generator at the start of its sequence.
func NewQuietBatches() *QuietBatches { return &QuietBatches{r: rand.New(rand.NewPCG(1, 2))} }

var quietTypes = []struct {
	typ model.EventType
	sys model.System
}{
	{model.JobStarted, model.Producer}, {model.ArtifactStaged, model.Producer}, {model.ArtifactFinalized, model.Producer},
	{model.JobSucceeded, model.Producer}, {model.SignalPublished, model.Producer}, {model.ArtifactTransferred, model.Exchange},
	{model.SignalTransferred, model.Exchange}, {model.BatchIdentified, model.Consumer}, {model.ConsumeStarted, model.Consumer},
}

// Append appends the events of batch i, one JSON line each, to out.
func (g *QuietBatches) Append(out [][]byte, i int) [][]byte {
	r := g.r
	date := model.MustParseDate("2026-09-30")
	p := fmt.Sprintf("pipeline-%03d.daily", i%100)
	id := fmt.Sprintf("%08d", i)
	k := 6 + r.IntN(4)
	sum := fmt.Sprintf("sha256:%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
	for j := range k {
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48)),
			Type: quietTypes[j].typ, Time: date.In(time.UTC).Add(17*time.Hour + time.Duration(j)*time.Minute), Pipeline: p,
			BusinessDate: date, BatchID: id, System: quietTypes[j].sys, Component: string(quietTypes[j].sys) + "-runner-3"}
		switch {
		case e.Type == model.ArtifactStaged:
			e.Object = "snapshot_" + id + ".csv.tmp"
		case e.Type.IsArtifact():
			e.Object, e.Checksum = "snapshot_"+id+".csv", sum
			e.Bytes, e.HasBytes = 9876543, true
		case e.Type.IsSignal():
			e.Object = "snapshot_" + id + ".flag"
		}
		if e.Type.NeedsRows() {
			e.Rows, e.HasRows = 120345, true
		}
		if e.Type == model.JobStarted || e.Type == model.ConsumeStarted {
			e.Attempt, e.HasAttempt = 1, true
		}
		e.Attrs = map[string]string{"location": "/inbox/finance", "host": "node-17"}
		out = append(out, e.AppendJSON(nil))
	}
	g.Events += k
	return out
}

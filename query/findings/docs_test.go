package findings_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/findings"
)

// The lifecycle examples of docs/detect.md and docs/findings.md are what
// the detector and this listing make of a seed-style story, run here: the
// seed pipeline's first attempt of 2026-09-19 fails and its re-run
// 20260919-r2 delivers the date; on 2026-09-20 the signal reaches the
// consumer's side at 21:59 (due 22:00), but its event reaches the detector
// at 22:02.

const seedPipeline = "account-balance-snapshot.daily"

func seedEvent(id, date, batch string, typ model.EventType, tm time.Time) model.Event {
	d := model.MustParseDate(date)
	e := model.Event{Spec: model.SpecV1, ID: id, Type: typ, Time: tm.UTC(), Pipeline: seedPipeline,
		BusinessDate: d, BatchID: batch, System: model.Producer, Component: "build-runner-3"}
	names := "account_balance_snapshot_" + d.Compact()
	switch typ {
	case model.ArtifactStaged:
		e.Object = names + ".csv.tmp"
	case model.ArtifactFinalized:
		e.Object = names + ".csv"
	case model.SignalPublished:
		e.Object = names + ".flag"
	case model.ArtifactTransferred:
		e.System, e.Component, e.Object = model.Exchange, "sftp-relay-2", names+".csv"
	case model.SignalTransferred:
		e.System, e.Component, e.Object = model.Exchange, "sftp-relay-2", names+".flag"
	case model.BatchIdentified, model.ConsumeStarted, model.ConsumeSucceeded:
		e.System, e.Component = model.Consumer, "ledger-loader"
	case model.JobFailed:
		e.Error = "exit status 1"
	}
	if typ.NeedsRows() {
		e.Rows, e.HasRows = 120118, true
	}
	return e
}

// arrival is an event and when it reaches the detector.
type arrival struct {
	at time.Time
	e  model.Event
}

// story returns the arrivals of the docs' story, in arrival order.
func story() []arrival {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	var out []arrival
	add := func(date, batch string, start time.Time, gap time.Duration, types ...model.EventType) {
		for i, typ := range types {
			tm := start.Add(time.Duration(i) * gap)
			out = append(out, arrival{tm, seedEvent(fmt.Sprintf("abs-%s-%02d", batch, i+1), date, batch, typ, tm)})
		}
	}
	happy := []model.EventType{model.JobStarted, model.ArtifactStaged, model.ArtifactFinalized, model.JobSucceeded,
		model.SignalPublished, model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified,
		model.ConsumeStarted, model.ConsumeSucceeded}
	add("2026-09-19", "20260919", at("2026-09-19T17:00:00Z"), 10*time.Minute, model.JobStarted, model.JobFailed)
	add("2026-09-19", "20260919-r2", at("2026-09-19T17:30:00Z"), 2*time.Minute, happy...)
	add("2026-09-20", "20260920", at("2026-09-20T17:00:00Z"), 2*time.Minute, happy[:6]...)
	late := seedEvent("abs-20260920-07", "2026-09-20", "20260920", model.SignalTransferred, at("2026-09-20T21:59:00Z"))
	out = append(out, arrival{at("2026-09-20T22:02:00Z"), late})
	add("2026-09-20", "20260920", at("2026-09-20T22:10:00Z"), 2*time.Minute, model.BatchIdentified, model.ConsumeStarted, model.ConsumeSucceeded)
	for i := len(out) - 3; i < len(out); i++ {
		out[i].e.ID = fmt.Sprintf("abs-20260920-%02d", i-len(out)+11)
	}
	return out
}

// storyFindings runs the story through the detector, a minute of safe
// time per step, and returns every record it published.
func storyFindings(t *testing.T) []detect.Finding {
	t.Helper()
	set, err := contract.LoadFS(os.DirFS("../../deploy"), "contracts")
	if err != nil {
		t.Fatal(err)
	}
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		t.Fatal(err)
	}
	arr := story()
	var out []detect.Finding
	next := 0
	for now := arr[0].at; !now.After(time.Date(2026, 9, 21, 0, 0, 0, 0, time.UTC)); now = now.Add(time.Minute) {
		for next < len(arr) && !arr[next].at.After(now) {
			d.Observe(&arr[next].e)
			next++
		}
		out = append(out, d.Advance(now, now)...)
	}
	return out
}

// docBlock returns the fenced block that follows the line holding after
// in file (the first fence below it).
func docBlock(t *testing.T, file, after string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), after)
	if !ok {
		t.Fatalf("%s: no %q", file, after)
	}
	_, rest, ok = strings.Cut(rest, "```")
	_, rest, ok2 := strings.Cut(rest, "\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s: no fenced block after %q", file, after)
	}
	return block
}

// TestDocsLifecycle: the records of docs/detect.md's lifecycle example are
// the detector's for the story (field for field, the diagnosis cut as the
// page cuts it), and the listing of docs/findings.md is what WriteText
// prints of them.
func TestDocsLifecycle(t *testing.T) {
	fs := storyFindings(t)
	var ended []detect.Finding
	for _, f := range fs {
		if f.State == detect.Resolved && f.Resolution != "" {
			ended = append(ended, f)
		}
	}
	if len(ended) != 2 || ended[0].SupersededBy == "" || ended[1].ReportingDelay == 0 {
		for _, f := range fs {
			t.Logf("%s", f.AppendJSON(nil))
		}
		t.Fatalf("the story ends %d findings other than plainly, want the superseded first attempt and the late report", len(ended))
	}
	block := docBlock(t, "../../docs/detect.md", "<!-- the lifecycle example: query/findings TestDocsLifecycle -->")
	var docs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("docs/detect.md lifecycle example: %v\n%s", err, line)
		}
		docs = append(docs, m)
	}
	if len(docs) != len(ended) {
		t.Fatalf("docs/detect.md shows %d records, the story ends %d", len(docs), len(ended))
	}
	for i, f := range ended {
		var got map[string]any
		json.Unmarshal(f.AppendJSON(nil), &got)
		diag := got["diagnosis"].(map[string]any)
		cut := map[string]any{}
		for _, k := range []string{"batch", "status", "verdict", "first_missing", "as_of"} {
			cut[k] = diag[k]
		}
		got["diagnosis"] = cut
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(docs[i])
		if !bytes.Equal(g, w) {
			t.Errorf("docs/detect.md lifecycle record %d:\n docs %s\n  got %s", i+1, w, g)
		}
	}

	// The listing: each finding once, in its latest record, as
	// handoff findings --state all reads them back.
	latest := map[string]detect.Finding{}
	var order []string
	for _, f := range fs {
		if _, ok := latest[f.Fingerprint]; !ok {
			order = append(order, f.Fingerprint)
		}
		latest[f.Fingerprint] = f
	}
	var res findings.Result
	for _, fp := range order {
		res.Findings = append(res.Findings, latest[fp])
	}
	// In the command's order (ByBatch): business date, pipeline, batch,
	// kind, name.
	slices.SortFunc(res.Findings, func(a, b detect.Finding) int {
		key := func(f detect.Finding) []string {
			return []string{f.Batch.BusinessDate.String(), f.Batch.Pipeline, f.Batch.BatchID, string(f.Kind), f.Name}
		}
		return slices.Compare(key(a), key(b))
	})
	var text strings.Builder
	if err := findings.WriteText(&text, res, "", findings.Times{}); err != nil {
		t.Fatal(err)
	}
	if want := docBlock(t, "../../docs/findings.md", "<!-- the lifecycle listing: query/findings TestDocsLifecycle -->"); text.String() != want {
		t.Errorf("docs/findings.md lifecycle listing:\n%s\nthe listing prints:\n%s", want, text.String())
	}
}

package schema_test

import (
	"bufio"
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/store/schema"
)

// TestFindingRowRoundTrip: every finding of the detector's golden records
// goes to its findings_v2 row and back to the same detect.Finding (the one
// encoder and the one decoder); read without the diagnosis column, the row
// gives the finding with only the diagnosis' summary.
func TestFindingRowRoundTrip(t *testing.T) {
	data, err := os.ReadFile("../../analyzer/detect/testdata/seed-findings.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f, err := detect.ParseFinding(sc.Bytes())
		if err != nil {
			t.Fatalf("golden record: %v", err)
		}
		f.Labels = map[string]string{"tier": "1", "team": "ledger"}
		n++
		row := schema.FindingRowOf(&f)
		if row.Status != string(f.Status) || row.FirstMissing != f.Diagnosis.FirstMissing || row.LabelKeys[0] != "team" ||
			row.LabelValues[0] != "ledger" || row.Diagnosis != string(f.Diagnosis.AppendJSON(nil)) {
			t.Errorf("%s: row %+v", f.Fingerprint, row)
		}
		back, err := row.Finding()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, f) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", f.Fingerprint, back, f)
		}
		row.Diagnosis = ""
		short, err := row.Finding()
		if err != nil {
			t.Fatal(err)
		}
		d := short.Diagnosis
		if d.Batch != f.Diagnosis.Batch || d.Status != f.Diagnosis.Status || d.Verdict != f.Diagnosis.Verdict ||
			d.FirstMissing != f.Diagnosis.FirstMissing || d.Events != 0 || d.Alive != nil {
			t.Errorf("%s without the diagnosis: %+v, want only the summary of %+v", f.Fingerprint, d, f.Diagnosis)
		}
		short.Diagnosis = f.Diagnosis
		if !reflect.DeepEqual(short, f) {
			t.Errorf("%s without the diagnosis: the rest differs\n got %+v\nwant %+v", f.Fingerprint, short, f)
		}
	}
	if n == 0 {
		t.Fatal("no golden finding")
	}
	bad := schema.FindingRow{Fingerprint: "x", Verdict: "maybe"}
	if _, err := bad.Finding(); err == nil {
		t.Error("a row with an unknown verdict decoded")
	}
}

// TestEventsPartitionHeader: the header's value round-trips, and a value
// that is not "p/n" with 0 <= p < n is not a partition.
func TestEventsPartitionHeader(t *testing.T) {
	for _, c := range []struct {
		p, n int
	}{{0, 1}, {3, 6}, {5, 6}, {127, 128}} {
		v := schema.AppendEventsPartition([]byte("x"), c.p, c.n)[1:]
		p, n, ok := schema.ParseEventsPartition(v)
		if !ok || int(p) != c.p || int(n) != c.n {
			t.Errorf("%d of %d: %q parses as %d of %d (ok %v)", c.p, c.n, v, p, n, ok)
		}
	}
	for _, v := range []string{"", "3", "3/", "/6", "6/6", "7/6", "-1/6", "a/6", "3/b", "3/6/9", " 3/6", "0/0", "99999999999/6"} {
		if p, n, ok := schema.ParseEventsPartition([]byte(v)); ok {
			t.Errorf("%q parses as %d of %d, want not a partition", v, p, n)
		}
	}
}

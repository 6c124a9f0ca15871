package manifest_test

import (
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/manifest"
)

var seedKey = model.BatchKey{Pipeline: "account-balance-snapshot.daily", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}

func TestEncodeIsCanonicalAndParsesBack(t *testing.T) {
	m := manifest.New(seedKey, manifest.File{Name: "account_balance_snapshot_20260930.csv", Rows: 120345, Bytes: 9876543, Checksum: "sha256:9f2c"})
	want := `{"spec":"handoff/manifest/v1","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","rows":120345,"files":[{"name":"account_balance_snapshot_20260930.csv","rows":120345,"bytes":9876543,"checksum":"sha256:9f2c"}]}` + "\n"
	if got := string(m.Encode()); got != want {
		t.Fatalf("Encode:\n got %s\nwant %s", got, want)
	}
	back, err := manifest.Parse(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if back.Key != seedKey || back.Rows != 120345 || len(back.Files) != 1 || back.Files[0] != m.Files[0] {
		t.Fatalf("Parse(Encode) = %+v", back)
	}
	if f, ok := back.File("account_balance_snapshot_20260930.csv"); !ok || f.Rows != 120345 {
		t.Fatalf("File: %+v %v", f, ok)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "empty"},
		{"{", "invalid JSON"},
		{`{"spec":"x"}`, `spec "x"`},
		{`{"spec":"handoff/manifest/v1","pipeline":"p","business_date":"2026-13-01","batch_id":"b"}`, "month out of range"},
		{`{"spec":"handoff/manifest/v1","pipeline":"p","business_date":"2026-09-30","batch_id":"b","rows":3,"files":[{"name":"a","rows":2}]}`, "add up to 2"},
		{`{"spec":"handoff/manifest/v1","pipeline":"p","business_date":"2026-09-30","batch_id":"b","files":[{"rows":2}]}`, "files[0].name: missing"},
		{`{"spec":"handoff/manifest/v1","pipeline":"p","business_date":"2026-09-30","batch_id":"b"} {}`, "more than one"},
	} {
		_, err := manifest.Parse([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(manifest.New(seedKey, manifest.File{Name: "a.csv", Rows: 1, Bytes: 2, Checksum: "sha256:00"}).Encode())
	f.Add([]byte(`{"spec":"handoff/manifest/v1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.Parse(data)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to something that parses to the same.
		again, err := manifest.Parse(m.Encode())
		if err != nil || again.Key != m.Key || again.Rows != m.Rows || len(again.Files) != len(m.Files) {
			t.Fatalf("round trip of %q: %+v, %v", data, again, err)
		}
	})
}

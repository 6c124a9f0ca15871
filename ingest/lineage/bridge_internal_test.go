package lineage

import (
	"context"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

const contractYAML = `pipeline: p.daily
batch_id: "{yyyymmdd}"
openlineage:
  job: "p_{yyyymmdd}"
`

func contracts(t *testing.T) *contract.Set {
	t.Helper()
	return testenv.Contracts(t, map[string]string{"p.yaml": contractYAML})
}

// TestDeadLetterReasons: each kind of invalid run event goes to the
// dead-letter topic under the ingester's reason for it; a job of no
// contract is not a dead letter.
func TestDeadLetterReasons(t *testing.T) {
	b := &Bridge{contracts: contracts(t)}
	for _, tt := range []struct {
		in   string
		want model.RejectKind // "" for no dead letter
	}{
		{`{`, model.RejectBadJSON},
		{`{} {}`, model.RejectBadJSON},
		{`{"eventType":"START","run":{"runId":"r"},"job":{"name":"p_20260930"}}`, model.RejectMissingField},
		{`{"eventType":"START","eventTime":"2026-09-30T00:00:00Z","job":{"name":"p_20260930"}}`, model.RejectMissingField},
		{`{"eventType":"PAUSE","eventTime":"2026-09-30T00:00:00Z","run":{"runId":"r"},"job":{"name":"p_20260930"}}`, model.RejectBadValue},
		{`{"eventType":"START","eventTime":"30/09/2026","run":{"runId":"r"},"job":{"name":"p_20260930"}}`, model.RejectBadValue},
		{`{"eventTime":"2026-09-30T00:00:00Z","run":{"runId":"r"},"job":{"name":"p_2026093x"}, "pad":"` + strings.Repeat("x", model.MaxEventSize) + `"}`, model.RejectTooLarge},
		{`{"eventType":"START","eventTime":"2026-09-30T00:00:00Z","run":{"runId":"r"},"job":{"name":"other"}}`, ""},
		{`{"eventType":"START","eventTime":"2026-09-30T00:00:00Z","run":{"runId":"r"},"job":{"name":"p_20260930"}}`, ""},
	} {
		events, dead := b.handle([]byte(tt.in))
		switch {
		case tt.want == "" && dead != nil:
			t.Errorf("%.60s: dead letter %s (%s), want none", tt.in, dead.Reason, dead.Error)
		case tt.want != "" && (dead == nil || dead.Reason != tt.want || string(dead.Payload) != tt.in):
			t.Errorf("%.60s: dead letter %+v, want reason %s with the message unchanged", tt.in, dead, tt.want)
		case tt.want != "" && len(events) > 0:
			t.Errorf("%.60s: events and a dead letter", tt.in)
		}
	}
	if st := b.Stats(); st.Unmapped != 1 {
		t.Errorf("unmapped %d, want 1", st.Unmapped)
	}
}

func TestLines(t *testing.T) {
	in := strings.Join([]string{
		`{"eventType":"START","eventTime":"2026-09-30T01:00:00+02:00","run":{"runId":"r1"},"job":{"name":"p_20260930"}}`,
		``,
		`not json`,
		`{"eventType":"COMPLETE","eventTime":"2026-09-30T02:00:00.123456Z","run":{"runId":"r1"},"job":{"name":"p_20260930"}}`,
		`{"eventType":"COMPLETE","eventTime":"2026-09-30T02:00:00Z","run":{"runId":"r9"},"job":{"name":"q_20260930"}}`,
	}, "\n")
	var got []model.Event
	var bad []int
	st, err := Lines(context.Background(), strings.NewReader(in), contracts(t), func(es []model.Event) error {
		got = append(got, es...)
		return nil
	}, func(line int, err error) { bad = append(bad, line) })
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{Read: 4, Mapped: 2, Rejected: 1, Unmapped: 1}) || len(bad) != 1 || bad[0] != 3 {
		t.Fatalf("stats %+v, bad lines %v", st, bad)
	}
	if len(got) != 2 || got[0].Type != model.JobStarted || got[1].Type != model.JobSucceeded || got[0].Key().String() != "p.daily/2026-09-30/20260930" ||
		got[0].Time.Format("15:04:05.000") != "23:00:00.000" || got[1].Time.Format("15:04:05.000") != "02:00:00.123" {
		t.Fatalf("events %+v", got)
	}
}

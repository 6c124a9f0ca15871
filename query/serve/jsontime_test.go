package serve_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/findings"
)

// jsonTime finds every JSON string that starts like an RFC 3339 time;
// msTime is the one form handoff writes them in.
var (
	jsonTime = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.+\-Z]*"`)
	msTime   = regexp.MustCompile(`^"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"$`)
)

// checkMilliseconds fails t for every time in b not written as RFC 3339
// UTC with exactly three fractional digits, and when b holds no time.
func checkMilliseconds(t *testing.T, what string, b []byte) {
	t.Helper()
	times := jsonTime.FindAll(b, -1)
	if len(times) == 0 {
		t.Errorf("%s: no time in %s", what, b)
	}
	for _, s := range times {
		if !msTime.Match(s) {
			t.Errorf("%s: time %s is not RFC 3339 UTC with milliseconds", what, s)
		}
	}
}

// TestJSONTimesMilliseconds checks every JSON writer behind the API and
// the listings: the batch list, one batch (the diagnosis and its sides),
// the findings (listing and the detector's record), each with times on a
// whole second, where a trimming encoder would drop the fraction.
func TestJSONTimesMilliseconds(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{
		"/api/v1/batches?pipeline=" + seedPipeline + "&from=2026-09-29&to=2026-09-30",
		"/api/v1/batches/" + seedBatch,
		"/api/v1/findings",
	} {
		code, body := f.get(t, path)
		if code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		checkMilliseconds(t, path, body)
	}

	whole := time.Date(2026, 9, 30, 22, 0, 0, 0, time.UTC)
	fd := detect.Finding{Fingerprint: "ab", State: detect.Open, Kind: detect.Overdue, Name: "signal_delivered",
		Batch:    model.BatchKey{Pipeline: "p", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "1"},
		RaisedAt: whole, Deadline: whole, EvidenceAsOf: whole.Add(time.Second), ResolvedAt: whole.Add(time.Hour)}
	checkMilliseconds(t, "findings.AppendJSON", findings.AppendJSON(nil, &fd, whole.Add(2*time.Hour)))
	checkMilliseconds(t, "detect.Finding", fd.AppendJSON(nil))
}

package backfill

import (
	"strings"

	"github.com/handoff-dev/handoff/model"
)

// keyParser parses diagnoses' batch names as model.ParseBatchKey does,
// remembering the pipeline of the last name parsed: the diagnoses of a
// pipeline come one after another, and for them only the date and the
// batch id are left to check. A full parse of every name (a split into
// a new slice, a date and two name checks) was 1.5% of a dry backfill's
// CPU (2026-12-02). FuzzKeyParser holds it to ParseBatchKey's answers.
type keyParser struct {
	// pipe is "pipeline/" of the last name parsed whole (a valid one),
	// its own copy: a diagnosis' strings may be reused after it.
	pipe     string
	pipeline string
}

// First and last business dates a stored event may carry (model's
// storable range), which ParseBatchKey checks too.
var (
	firstStorable = model.Date{Year: 1970, Month: 1, Day: 2}
	lastStorable  = model.Date{Year: 2105, Month: 12, Day: 31}
)

// parse returns the key of batch name s and whether model.ParseBatchKey
// accepts s.
func (p *keyParser) parse(s string) (model.BatchKey, bool) {
	if p.pipe != "" && strings.HasPrefix(s, p.pipe) {
		// ParseBatchKey takes s when it is three parts: the pipeline
		// checked before, a date (10 bytes, none a '/'), and a batch id
		// that is a name (so without a '/').
		rest := s[len(p.pipe):]
		if len(rest) < 12 || rest[10] != '/' {
			return model.BatchKey{}, false
		}
		d, err := model.ParseDate(rest[:10])
		if err != nil || d.Compare(firstStorable) < 0 || d.Compare(lastStorable) > 0 {
			return model.BatchKey{}, false
		}
		id := rest[11:]
		if model.CheckName("batch_id", id) != nil {
			return model.BatchKey{}, false
		}
		return model.BatchKey{Pipeline: p.pipeline, BusinessDate: d, BatchID: id}, true
	}
	k, err := model.ParseBatchKey(s)
	if err != nil {
		return model.BatchKey{}, false
	}
	p.pipe = strings.Clone(s[:len(k.Pipeline)+1])
	p.pipeline = p.pipe[:len(k.Pipeline)]
	return k, true
}

package learn

import (
	"strings"

	"github.com/handoff-dev/handoff/model"
)

// templateShare is the share of a pipeline's batches a template must
// describe to be suggested: the rest are named in the comment (a
// misnamed file, a hand-made id).
const templateShare = 0.95

// idShape is one batch id taken apart around its business date: prefix,
// the date's placeholder, and what follows, itself cut into a literal,
// a run of digits and a tail (the time of a sub-daily firing).
type idShape struct {
	prefix, datePH, sep, digits, tail string
}

// shapeID takes id apart; false when the id does not contain the business
// date in either form.
func shapeID(id string, d model.Date) (idShape, bool) {
	var s idShape
	compact, iso := d.Compact(), d.String()
	rest := ""
	if i := strings.Index(id, compact); i >= 0 {
		s.prefix, s.datePH, rest = id[:i], "{yyyymmdd}", id[i+len(compact):]
	} else if i := strings.Index(id, iso); i >= 0 {
		s.prefix, s.datePH, rest = id[:i], "{business_date}", id[i+len(iso):]
	} else {
		return s, false
	}
	i := 0
	for i < len(rest) && !isDigit(rest[i]) {
		i++
	}
	j := i
	for j < len(rest) && isDigit(rest[j]) {
		j++
	}
	s.sep, s.digits, s.tail = rest[:i], rest[i:j], rest[j:]
	return s, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// idTemplate is the batch_id template learned from a pipeline's ids.
type idTemplate struct {
	text string
	// timed: the digits after the date are the firing's time, {hh} (2)
	// or {hh}{mi} (4).
	hasHH, hasMI bool
	matched      int
	exceptions   []model.BatchKey
}

// slot returns the time of day a batch id of t names, in minutes after
// midnight, and false when the id does not have t's shape.
func (t idTemplate) slot(k model.BatchKey) (int, bool) {
	s, ok := shapeID(k.BatchID, k.BusinessDate)
	if !ok {
		return 0, false
	}
	hh, mi := 0, 0
	switch {
	case t.hasMI && len(s.digits) == 4:
		hh, mi = atoi2(s.digits[:2]), atoi2(s.digits[2:])
	case t.hasHH && !t.hasMI && len(s.digits) == 2:
		hh = atoi2(s.digits)
	case !t.hasHH:
		return 0, true
	default:
		return 0, false
	}
	if hh > 23 || mi > 59 {
		return 0, false
	}
	return hh*60 + mi, true
}

func atoi2(s string) int { return int(s[0]-'0')*10 + int(s[1]-'0') }

// learnBatchID finds the template most batch ids follow: the business
// date in one of its forms, literal text around it, and, when the digits
// after the date vary from batch to batch, the firing's hour (and minute).
func learnBatchID(batches []*batch) (idTemplate, bool) {
	type head struct{ prefix, datePH, sep string }
	count := map[head]int{}
	shapes := make([]idShape, len(batches))
	okShape := make([]bool, len(batches))
	for i, b := range batches {
		s, ok := shapeID(b.key.BatchID, b.key.BusinessDate)
		shapes[i], okShape[i] = s, ok
		if ok {
			count[head{s.prefix, s.datePH, s.sep}]++
		}
	}
	var best head
	n := -1
	for h, c := range count {
		if c > n || c == n && h.prefix+h.datePH+h.sep < best.prefix+best.datePH+best.sep {
			best, n = h, c
		}
	}
	if n <= 0 {
		return idTemplate{}, false
	}
	// The digits after the date: constant is literal text; varying, of
	// length 2 or 4, is the firing's time.
	digits := map[string]int{}
	tails := map[string]int{}
	for i, s := range shapes {
		if okShape[i] && (head{s.prefix, s.datePH, s.sep}) == best {
			digits[s.digits]++
			tails[s.tail]++
		}
	}
	tail := mostCommon(tails)
	t := idTemplate{}
	timed := len(digits) > 1
	dlen := 0
	if timed {
		for d := range digits {
			if dlen == 0 || len(d) == dlen {
				dlen = len(d)
			} else {
				dlen = -1
			}
		}
		if dlen == 2 {
			t.hasHH = true
		} else if dlen == 4 {
			t.hasHH, t.hasMI = true, true
		} else {
			timed = false
		}
	}
	var b strings.Builder
	b.WriteString(best.prefix + best.datePH + best.sep)
	switch {
	case t.hasMI:
		b.WriteString("{hh}{mi}")
	case t.hasHH:
		b.WriteString("{hh}")
	default:
		b.WriteString(mostCommon(digits))
	}
	b.WriteString(tail)
	t.text = b.String()
	if strings.ContainsAny(best.prefix+best.sep+tail, "{}") {
		return idTemplate{}, false
	}
	for i, s := range shapes {
		ok := okShape[i] && (head{s.prefix, s.datePH, s.sep}) == best && s.tail == tail
		if ok && timed {
			_, ok = t.slot(batches[i].key)
		} else if ok {
			ok = s.digits == mostCommon(digits)
		}
		if ok {
			t.matched++
		} else {
			t.exceptions = append(t.exceptions, batches[i].key)
		}
	}
	return t, float64(t.matched) >= templateShare*float64(len(batches))
}

// mostCommon returns the key with the highest count, the least such key
// on ties.
func mostCommon(m map[string]int) string {
	best, n := "", -1
	for k, c := range m {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best
}

// nameTemplate generalizes one object name of batch k into a template:
// the batch id becomes {batch_id}, else the business date {yyyymmdd} or
// {business_date}; the pipeline's name becomes {pipeline}. It returns ""
// when the name holds neither the batch id nor the date (nothing would
// tell batches apart), or text a template cannot hold.
func nameTemplate(name string, k model.BatchKey) string {
	if name == "" || strings.ContainsAny(name, "{}\x00\x01\x02") {
		return ""
	}
	const mBatch, mPipe, mDate, mISO = "\x00", "\x01", "\x02", "\x03"
	s := name
	hasID := k.BatchID != "" && strings.Contains(s, k.BatchID)
	if hasID {
		s = strings.Replace(s, k.BatchID, mBatch, 1)
	}
	// The date may be in the name beside the batch id, too.
	n := len(s)
	s = strings.ReplaceAll(s, k.BusinessDate.Compact(), mDate)
	s = strings.ReplaceAll(s, k.BusinessDate.String(), mISO)
	if !hasID && len(s) == n {
		return ""
	}
	s = strings.Replace(s, k.Pipeline, mPipe, 1)
	r := strings.NewReplacer(mBatch, "{batch_id}", mPipe, "{pipeline}", mDate, "{yyyymmdd}", mISO, "{business_date}")
	return r.Replace(s)
}

// nameLearned is the artifact or signal template of a pipeline.
type nameLearned struct {
	text       string
	named      int // batches that named such an object
	matched    int
	exceptions []model.BatchKey
}

// learnName finds the template most of the batches' object names follow;
// false when fewer than templateShare of the batches that named one agree.
func learnName(batches []*batch, get func(*batch) string) (nameLearned, bool) {
	count := map[string]int{}
	tmpls := make([]string, len(batches))
	var nl nameLearned
	for i, b := range batches {
		name := get(b)
		if name == "" {
			continue
		}
		nl.named++
		tmpls[i] = nameTemplate(name, b.key)
		if tmpls[i] != "" {
			count[tmpls[i]]++
		}
	}
	if len(count) == 0 {
		return nl, false
	}
	nl.text = mostCommon(count)
	nl.matched = count[nl.text]
	for i, b := range batches {
		if get(b) != "" && tmpls[i] != nl.text {
			nl.exceptions = append(nl.exceptions, b.key)
		}
	}
	return nl, float64(nl.matched) >= templateShare*float64(nl.named)
}

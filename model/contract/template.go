package contract

import (
	"errors"
	"fmt"
	"strings"

	"github.com/handoff-dev/handoff/model"
)

// Template is a name pattern with placeholders that derive from a batch's
// identity: {pipeline}, {business_date} (YYYY-MM-DD), {batch_id},
// {yyyymmdd}, {yyyy}, {mm} and {dd}, and for schedules that fire within a
// day {hh} (hour, 00-23) and {mi} (minute, 00-59) of the batch's firing.
// The zero Template is "no template".
type Template struct {
	text  string
	parts []part
	// timed records {hh} or {mi}: the replay asks for every batch whether
	// a name needs the time of day.
	timed bool
}

type part struct {
	lit string
	ph  placeholder
}

type placeholder int8

const (
	phNone placeholder = iota
	phPipeline
	phBusinessDate
	phBatchID
	phYYYYMMDD
	phYYYY
	phMM
	phDD
	phHH
	phMI
)

var placeholders = map[string]placeholder{
	"pipeline":      phPipeline,
	"business_date": phBusinessDate,
	"batch_id":      phBatchID,
	"yyyymmdd":      phYYYYMMDD,
	"yyyy":          phYYYY,
	"mm":            phMM,
	"dd":            phDD,
	"hh":            phHH,
	"mi":            phMI,
}

// ParseTemplate parses a name template. It fails on an unknown or unclosed
// placeholder.
func ParseTemplate(s string) (Template, error) {
	t := Template{text: s}
	rest := s
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return Template{}, fmt.Errorf("template %q: '}' without '{'", s)
			}
			t.parts = append(t.parts, part{lit: rest})
			break
		}
		if i > 0 {
			if strings.IndexByte(rest[:i], '}') >= 0 {
				return Template{}, fmt.Errorf("template %q: '}' without '{'", s)
			}
			t.parts = append(t.parts, part{lit: rest[:i]})
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return Template{}, fmt.Errorf("template %q: unclosed '{'", s)
		}
		name := rest[i+1 : i+j]
		ph, ok := placeholders[name]
		if !ok {
			return Template{}, fmt.Errorf("template %q: unknown placeholder {%s} (want {pipeline}, {business_date}, {batch_id}, {yyyymmdd}, {yyyy}, {mm}, {dd}, {hh} or {mi})", s, name)
		}
		t.parts = append(t.parts, part{ph: ph})
		t.timed = t.timed || ph == phHH || ph == phMI
		rest = rest[i+j+1:]
	}
	return t, nil
}

// MustTemplate is ParseTemplate for constants; it panics on a bad template.
func MustTemplate(s string) Template {
	t, err := ParseTemplate(s)
	if err != nil {
		panic(err)
	}
	return t
}

// IsZero reports whether t is the zero Template.
func (t Template) IsZero() bool { return t.text == "" }

// String returns the template as written.
func (t Template) String() string { return t.text }

// Uses reports whether the template contains the named placeholder.
func (t Template) Uses(name string) bool {
	ph := placeholders[name]
	for _, p := range t.parts {
		if p.ph == ph && ph != phNone {
			return true
		}
	}
	return false
}

// Render fills the template from a batch key. {hh} and {mi} render as 00:
// the key alone does not say the time of day, so names of sub-daily
// batches come from Contract.ArtifactName and Contract.SignalName, which
// know the schedule.
func (t Template) Render(k model.BatchKey) string {
	return string(t.AppendRender(make([]byte, 0, len(t.text)+len(k.Pipeline)+len(k.BatchID)+10), k))
}

// AppendRender appends the rendered template to b; Render without the
// intermediate allocations, for the replay's hot path.
func (t Template) AppendRender(b []byte, k model.BatchKey) []byte {
	return t.appendAt(b, k, 0, 0)
}

// usesTime reports whether the template needs the time of day.
func (t Template) usesTime() bool { return t.timed }

// renderAt renders the template for the firing at hh:mi of k's date.
func (t Template) renderAt(k model.BatchKey, hh, mi int) string {
	return string(t.appendAt(make([]byte, 0, len(t.text)+len(k.Pipeline)+len(k.BatchID)+10), k, hh, mi))
}

func (t Template) appendAt(b []byte, k model.BatchKey, hh, mi int) []byte {
	d := k.BusinessDate
	two := func(b []byte, n int) []byte { return append(b, byte('0'+n/10%10), byte('0'+n%10)) }
	for _, p := range t.parts {
		switch p.ph {
		case phNone:
			b = append(b, p.lit...)
		case phPipeline:
			b = append(b, k.Pipeline...)
		case phBusinessDate:
			b = d.AppendFormat(b)
		case phBatchID:
			b = append(b, k.BatchID...)
		case phYYYYMMDD:
			b = two(two(b, d.Year/100), d.Year%100)
			b = two(two(b, int(d.Month)), d.Day)
		case phYYYY:
			b = two(two(b, d.Year/100), d.Year%100)
		case phMM:
			b = two(b, int(d.Month))
		case phDD:
			b = two(b, d.Day)
		case phHH:
			b = two(b, hh)
		case phMI:
			b = two(b, mi)
		}
	}
	return b
}

// stamp is what a rendered name says about its batch; -1 where it says
// nothing.
type stamp struct {
	year, month, day, hour, minute int
}

// match reads a name rendered by t back into the date and time it names,
// the inverse of renderAt: every placeholder but {pipeline} and
// {batch_id} has a fixed width, so the reading is unique. It fails when s
// does not have the template's shape, a field is out of range, or two
// placeholders disagree ({yyyymmdd} and {dd}).
func (t Template) match(s, pipeline string) (stamp, bool) {
	st := stamp{-1, -1, -1, -1, -1}
	set := func(f *int, v int) bool {
		if *f >= 0 && *f != v {
			return false
		}
		*f = v
		return true
	}
	num := func(n int) (int, bool) {
		if len(s) < n {
			return 0, false
		}
		v, ok := 0, true
		for i := 0; i < n; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				ok = false
			}
			v = v*10 + int(c-'0')
		}
		s = s[n:]
		return v, ok
	}
	for _, p := range t.parts {
		ok := true
		switch p.ph {
		case phNone:
			if ok = strings.HasPrefix(s, p.lit); ok {
				s = s[len(p.lit):]
			}
		case phPipeline:
			if ok = strings.HasPrefix(s, pipeline); ok {
				s = s[len(pipeline):]
			}
		case phBatchID:
			return stamp{}, false // a batch id never derives from itself
		case phBusinessDate:
			if len(s) < 10 {
				return stamp{}, false
			}
			d, err := model.ParseDate(s[:10])
			s = s[10:]
			ok = err == nil && set(&st.year, d.Year) && set(&st.month, int(d.Month)) && set(&st.day, d.Day)
		case phYYYYMMDD:
			y, ok1 := num(4)
			m, ok2 := num(2)
			d, ok3 := num(2)
			ok = ok1 && ok2 && ok3 && set(&st.year, y) && set(&st.month, m) && set(&st.day, d)
		case phYYYY:
			v, ok1 := num(4)
			ok = ok1 && set(&st.year, v)
		case phMM:
			v, ok1 := num(2)
			ok = ok1 && set(&st.month, v)
		case phDD:
			v, ok1 := num(2)
			ok = ok1 && set(&st.day, v)
		case phHH:
			v, ok1 := num(2)
			ok = ok1 && v < 24 && set(&st.hour, v)
		case phMI:
			v, ok1 := num(2)
			ok = ok1 && v < 60 && set(&st.minute, v)
		}
		if !ok {
			return stamp{}, false
		}
	}
	return st, s == ""
}

// MaxFileName is the longest file name, in bytes, that Linux file systems
// accept (NAME_MAX).
const MaxFileName = 255

// CheckFileName reports why name cannot be one file in one directory: it
// is empty, longer than MaxFileName bytes, "." or "..", or holds '/', '\',
// NUL or another control character. A data file or signal name that
// breaks one of these would land elsewhere than the receiver directory,
// or nowhere.
func CheckFileName(name string) error {
	switch {
	case name == "":
		return errors.New("renders an empty name")
	case name == "." || name == "..":
		return fmt.Errorf("renders %q, which names a directory, not a file", name)
	case len(name) > MaxFileName:
		return fmt.Errorf("renders a name of %d bytes, over the %d-byte limit of a file name", len(name), MaxFileName)
	}
	for _, r := range name {
		if err := nameChar(r); err != nil {
			return err
		}
	}
	return nil
}

// nameChar reports why r cannot be in a file name of a receiver.
func nameChar(r rune) error {
	switch {
	case r == '/' || r == '\\':
		return fmt.Errorf("contains %q: a name is one file in the receiver directory, never a path", r)
	case r == 0:
		return errors.New("contains NUL")
	case r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return fmt.Errorf("contains the control character %U", r)
	}
	return nil
}

// checkNameTemplate checks that t's literal text can be part of a file
// name, before any rendering: a '/' or '\' in a template is a path, and
// a template that is "." or ".." is a directory.
func checkNameTemplate(t Template) error {
	for _, p := range t.parts {
		if p.ph != phNone {
			continue
		}
		for _, r := range p.lit {
			if err := nameChar(r); err != nil {
				return fmt.Errorf("%q: %w", t.text, err)
			}
		}
	}
	if t.text == "." || t.text == ".." {
		return fmt.Errorf("%q: names a directory, not a file", t.text)
	}
	return nil
}

package contract

import (
	"fmt"
	"strings"

	"github.com/handoff-dev/handoff/model"
)

// Template is a name pattern with placeholders that derive from a batch's
// identity: {pipeline}, {business_date} (YYYY-MM-DD), {batch_id},
// {yyyymmdd}, {yyyy}, {mm} and {dd}. The zero Template is "no template".
type Template struct {
	text  string
	parts []part
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
)

var placeholders = map[string]placeholder{
	"pipeline":      phPipeline,
	"business_date": phBusinessDate,
	"batch_id":      phBatchID,
	"yyyymmdd":      phYYYYMMDD,
	"yyyy":          phYYYY,
	"mm":            phMM,
	"dd":            phDD,
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
			return Template{}, fmt.Errorf("template %q: unknown placeholder {%s} (want {pipeline}, {business_date}, {batch_id}, {yyyymmdd}, {yyyy}, {mm} or {dd})", s, name)
		}
		t.parts = append(t.parts, part{ph: ph})
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

// Render fills the template from a batch key.
func (t Template) Render(k model.BatchKey) string {
	return string(t.AppendRender(make([]byte, 0, len(t.text)+len(k.Pipeline)+len(k.BatchID)+10), k))
}

// AppendRender appends the rendered template to b; Render without the
// intermediate allocations, for the replay's hot path.
func (t Template) AppendRender(b []byte, k model.BatchKey) []byte {
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
		}
	}
	return b
}

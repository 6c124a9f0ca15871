package model

import (
	"fmt"

	"github.com/valyala/fastjson"
)

// appendValue appends v as compact JSON. fastjson's own MarshalTo is not
// used: it copies strings it has not unescaped verbatim (invalid UTF-8 and
// raw control characters included) and quotes the others with Go escapes
// such as \x01, which are not JSON.
func appendValue(b []byte, v *fastjson.Value) ([]byte, error) {
	var err error
	switch v.Type() {
	case fastjson.TypeString:
		return AppendJSONString(b, validUTF8(v.GetStringBytes())), nil
	case fastjson.TypeNumber:
		if err := checkNumber(v); err != nil {
			return b, err
		}
		return v.MarshalTo(b), nil
	case fastjson.TypeObject:
		o := v.GetObject()
		b = append(b, '{')
		n := 0
		o.Visit(func(k []byte, v *fastjson.Value) {
			if err != nil {
				return
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = AppendJSONString(b, validUTF8(k))
			b = append(b, ':')
			b, err = appendValue(b, v)
		})
		return append(b, '}'), err
	case fastjson.TypeArray:
		b = append(b, '[')
		for i, e := range v.GetArray() {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	// true, false and null.
	return v.MarshalTo(b), nil
}

// checkNumber rejects numbers that fastjson accepts but JSON does not, such
// as "+1", "01", "1." or "nan": such a message is not JSON.
func checkNumber(v *fastjson.Value) error {
	s := string(v.MarshalTo(nil))
	if !isJSONNumber(s) {
		return &ValidationError{Reason: fmt.Sprintf("not valid JSON: bad number %q", s), Kind: RejectBadJSON}
	}
	return nil
}

// isJSONNumber reports whether s matches the number grammar of RFC 8259:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

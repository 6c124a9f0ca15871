package model

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf16"

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
		start := len(b)
		b = v.MarshalTo(b)
		if !isJSONNumber(b2s(b[start:])) {
			return b, &ValidationError{Reason: fmt.Sprintf("not valid JSON: bad number %q", b[start:]), Kind: RejectBadJSON}
		}
		return b, nil
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
// as "+1", "01", "1." or "nan": such a message is not JSON. The number is
// written into buf, returned for reuse (every count of every event passes
// here, so it is not allocated each time).
func checkNumber(buf []byte, v *fastjson.Value) ([]byte, error) {
	buf = v.MarshalTo(buf[:0])
	if !isJSONNumber(b2s(buf)) {
		return buf, &ValidationError{Reason: fmt.Sprintf("not valid JSON: bad number %q", buf), Kind: RejectBadJSON}
	}
	return buf, nil
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

// checkStrings rejects what fastjson accepts inside the strings of a
// parsed message and RFC 8259 does not: raw control characters, escapes
// other than \" \\ \/ \b \f \n \r \t \uXXXX, and \u escapes of lone UTF-16
// surrogates, which fastjson keeps as literal backslash text. A lone
// surrogate is not a character, so no faithful value exists to store
// (docs/decisions.md). Most events have neither control bytes nor
// backslashes, and pay for two fast scans.
func checkStrings(data []byte) error {
	if hasControl(data) {
		// Control bytes outside strings are white space (the parser has
		// rejected the others); tell them apart by following the strings.
		in := false
		for i := 0; i < len(data); {
			c := data[i]
			switch {
			case !in:
				in = c == '"'
				i++
			case c == '"':
				in = false
				i++
			case c < 0x20:
				return &ValidationError{Reason: fmt.Sprintf(`not valid JSON: raw control character 0x%02x inside a string at byte %d (RFC 8259: write it as \u%04x)`, c, i, c), Kind: RejectBadJSON}
			case c == '\\':
				n, err := checkEscape(data, i)
				if err != nil {
					return err
				}
				i = n
			default:
				i++
			}
		}
		return nil
	}
	// Backslashes occur only inside strings of a parsed message.
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\\')
		if j < 0 {
			return nil
		}
		n, err := checkEscape(data, i+j)
		if err != nil {
			return err
		}
		i = n
	}
	return nil
}

// checkEscape checks the escape at data[i] (a backslash inside a string)
// and returns the index after it.
func checkEscape(data []byte, i int) (int, error) {
	if i+1 >= len(data) {
		return 0, badEscape(data, i, i+1)
	}
	switch data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
	default:
		return 0, badEscape(data, i, i+2)
	}
	r, ok := hex4(data, i+2)
	if !ok {
		return 0, badEscape(data, i, min(i+6, len(data)))
	}
	if !utf16.IsSurrogate(r) {
		return i + 6, nil
	}
	if r < 0xdc00 && i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
		if r2, ok := hex4(data, i+8); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
			return i + 12, nil
		}
	}
	return 0, &ValidationError{Reason: fmt.Sprintf(`not valid JSON: lone surrogate %s inside a string at byte %d: not a Unicode character`, data[i:i+6], i), Kind: RejectBadJSON}
}

func badEscape(data []byte, i, j int) error {
	return &ValidationError{Reason: fmt.Sprintf("not valid JSON: bad escape %q inside a string at byte %d", data[i:j], i), Kind: RejectBadJSON}
}

// hex4 decodes the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// hasControl reports whether b holds a byte below 0x20, eight bytes at a
// time: (x - 0x20 in every byte) &^ x has a byte's top bit set exactly
// where a byte of x is below 0x20, for byte values below 0x80.
func hasControl(b []byte) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+16 <= len(b); i += 16 {
		x := binary.LittleEndian.Uint64(b[i:])
		y := binary.LittleEndian.Uint64(b[i+8:])
		if ((x-ones*0x20)&^x|(y-ones*0x20)&^y)&tops != 0 {
			return true
		}
	}
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-ones*0x20)&^x&tops != 0 {
			return true
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}

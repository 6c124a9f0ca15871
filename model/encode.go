package model

import (
	"sort"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the event's canonical JSON encoding (one line, fields in
// wire order, empty optional fields left out, attrs keys sorted) to b.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"spec":`...)
	b = AppendJSONString(b, e.Spec)
	b = append(b, `,"event_id":`...)
	b = AppendJSONString(b, e.ID)
	b = append(b, `,"type":`...)
	b = AppendJSONString(b, string(e.Type))
	b = append(b, `,"time":"`...)
	b = AppendTime(b, e.Time)
	b = append(b, `","pipeline":`...)
	b = AppendJSONString(b, e.Pipeline)
	if !e.BusinessDate.IsZero() {
		b = append(b, `,"business_date":"`...)
		b = e.BusinessDate.AppendFormat(b)
		b = append(b, '"')
	}
	if e.BatchID != "" {
		b = append(b, `,"batch_id":`...)
		b = AppendJSONString(b, e.BatchID)
	}
	b = append(b, `,"system":`...)
	b = AppendJSONString(b, string(e.System))
	b = appendOptString(b, "component", e.Component)
	b = appendOptString(b, "object", e.Object)
	if e.HasRows {
		b = append(b, `,"rows":`...)
		b = strconv.AppendInt(b, e.Rows, 10)
	}
	if e.HasBytes {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, e.Bytes, 10)
	}
	b = appendOptString(b, "checksum", e.Checksum)
	if e.HasAttempt {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, e.Attempt, 10)
	}
	b = appendOptString(b, "error", e.Error)
	if len(e.Attrs) > 0 {
		keys := make([]string, 0, len(e.Attrs))
		for k := range e.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, `,"attrs":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, k)
			b = append(b, ':')
			b = AppendJSONString(b, e.Attrs[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler with the canonical encoding.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler; it validates like Decode.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := Decode(data)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

func appendOptString(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return AppendJSONString(b, v)
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD; U+2028 and U+2029 are escaped for JavaScript; <, > and & are not
// HTML-escaped (handoff's JSON is read in terminals and by programs). Every
// JSON handoff writes by hand goes through it.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		i += jsonPlainPrefix(s[i:])
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonPlainPrefix returns the length of s's longest prefix of bytes a
// JSON string holds as they are (jsonSafe), testing eight bytes at a time:
// a backfill writes gigabytes of JSON, nearly all of it such bytes.
func jsonPlainPrefix(s string) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8] // one bounds check for the eight loads, which the compiler makes one
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		// A byte below 0x20, a quote, a backslash or a byte with the high
		// bit set stops the word test.
		q, bs := x^'"'*ones, x^'\\'*ones
		if ((x-0x20*ones)&^x|(q-ones)&^q|(bs-ones)&^bs|x)&highs != 0 {
			break
		}
	}
	for ; i < len(s) && jsonSafe[s[i]]; i++ {
	}
	return i
}

// jsonSafe marks the bytes a JSON string holds as they are: printable ASCII
// but the quote and the backslash.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

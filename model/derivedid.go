package model

import (
	"crypto/sha256"
	"encoding/hex"
)

// DerivedEventID returns an event_id derived from parts: the same parts
// always give the same id, different parts (with overwhelming
// probability) a different one. Tools that observe rather than act (a
// watcher seeing a file, a restore recording a signal) derive their ids
// from what they observed, so observing it again after a restart is the
// same event, deduplicated by event_id like any redelivery. The id is a
// version 8 UUID (RFC 9562) over the SHA-256 of the parts, each ended by
// a NUL byte so that ("ab", "c") and ("a", "bc") differ.
func DerivedEventID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // variant 10
	b := make([]byte, 36)
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b)
}

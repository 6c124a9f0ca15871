package model_test

import (
	"testing"

	"github.com/handoff-dev/handoff/model"
)

func BenchmarkDecode(b *testing.B) {
	data := []byte(typicalEvent)
	var d model.Decoder
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e, err := model.Decode([]byte(typicalEvent))
	if err != nil {
		b.Fatal(err)
	}
	buf := e.AppendJSON(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendJSON(buf[:0])
	}
}

// BenchmarkDecodeView is BenchmarkDecode for the in-place decode that
// ingest uses (no copies, no attrs map).
func BenchmarkDecodeView(b *testing.B) {
	data := []byte(typicalEvent)
	var d model.Decoder
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.DecodeView(data); err != nil {
			b.Fatal(err)
		}
	}
}

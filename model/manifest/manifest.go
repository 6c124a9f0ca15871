// Package manifest is the content of a completion signal that carries a
// manifest (contract key signal_content: manifest): the batch it declares
// complete, and each data file with its rows, bytes and checksum. A data
// file plus a flag carrying the row count and checksum is a common
// exchange convention (docs/seed-case.md); this is handoff's form of it,
// written by restore-signal and read by watch and verify.
//
// The format is one JSON object:
//
//	{"spec":"handoff/manifest/v1","pipeline":"account-balance-snapshot.daily",
//	 "business_date":"2026-09-30","batch_id":"20260930","rows":120345,
//	 "files":[{"name":"account_balance_snapshot_20260930.csv","rows":120345,
//	   "bytes":9876543,"checksum":"sha256:9f2c..."}]}
//
// Encode is canonical (fixed key order, one line, a final newline), so the
// same batch and files give the same bytes: a second restore compares
// bytes to know there is nothing to do.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/handoff-dev/handoff/model"
)

// Spec is the value of the "spec" field.
const Spec = "handoff/manifest/v1"

// MaxSize is the largest manifest read; a signal is a declaration, not
// data.
const MaxSize = 1 << 20

// File is one data file of the batch.
type File struct {
	Name     string `json:"name"`
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
	Checksum string `json:"checksum"`
}

// Manifest declares a batch complete.
type Manifest struct {
	Key   model.BatchKey
	Rows  int64 // the sum of the files' rows
	Files []File
}

type wire struct {
	Spec         string `json:"spec"`
	Pipeline     string `json:"pipeline"`
	BusinessDate string `json:"business_date"`
	BatchID      string `json:"batch_id"`
	Rows         int64  `json:"rows"`
	Files        []File `json:"files"`
}

// New returns the manifest of key over files, with Rows their sum.
func New(key model.BatchKey, files ...File) Manifest {
	m := Manifest{Key: key, Files: files}
	for _, f := range files {
		m.Rows += f.Rows
	}
	return m
}

// Encode returns the canonical bytes of m.
func (m Manifest) Encode() []byte {
	files := m.Files
	if files == nil {
		files = []File{}
	}
	b, err := json.Marshal(wire{Spec: Spec, Pipeline: m.Key.Pipeline, BusinessDate: m.Key.BusinessDate.String(),
		BatchID: m.Key.BatchID, Rows: m.Rows, Files: files})
	if err != nil {
		panic("manifest: encode: " + err.Error()) // strings and integers always encode
	}
	return append(b, '\n')
}

// Parse reads a manifest. Errors name the field and the reason. Unknown
// fields are ignored, as in events: a newer writer may add some.
func Parse(data []byte) (Manifest, error) {
	if len(data) > MaxSize {
		return Manifest{}, fmt.Errorf("manifest: %d bytes, over the %d-byte limit", len(data), MaxSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Manifest{}, errors.New("manifest: empty (the contract says signal_content: manifest)")
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&w); err != nil {
		return Manifest{}, fmt.Errorf("manifest: invalid JSON: %w", err)
	}
	if dec.More() {
		return Manifest{}, errors.New("manifest: more than one JSON value")
	}
	if w.Spec != Spec {
		return Manifest{}, fmt.Errorf("manifest: spec %q: want %q", w.Spec, Spec)
	}
	key, err := model.ParseBatchKey(w.Pipeline + "/" + w.BusinessDate + "/" + w.BatchID)
	if err != nil || strings.Contains(w.Pipeline, "/") || strings.Contains(w.BatchID, "/") {
		if err == nil {
			err = errors.New("'/' in pipeline or batch_id")
		}
		return Manifest{}, fmt.Errorf("manifest: batch identity: %w", err)
	}
	var sum int64
	for i, f := range w.Files {
		switch {
		case f.Name == "":
			return Manifest{}, fmt.Errorf("manifest: files[%d].name: missing", i)
		case f.Rows < 0:
			return Manifest{}, fmt.Errorf("manifest: files[%d].rows: %d is negative", i, f.Rows)
		case f.Bytes < 0:
			return Manifest{}, fmt.Errorf("manifest: files[%d].bytes: %d is negative", i, f.Bytes)
		}
		sum += f.Rows
	}
	if len(w.Files) > 0 && sum != w.Rows {
		return Manifest{}, fmt.Errorf("manifest: rows: %d, but the files' rows add up to %d", w.Rows, sum)
	}
	return Manifest{Key: key, Rows: w.Rows, Files: w.Files}, nil
}

// File returns the entry of the file called name.
func (m Manifest) File(name string) (File, bool) {
	for _, f := range m.Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

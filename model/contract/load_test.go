package contract_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/handoff-dev/handoff/model/contract"
)

// TestLoadFSRefusesIrregularFiles checks that only regular files are read:
// the MapFS files hold a valid contract, so only the mode can refuse them.
func TestLoadFSRefusesIrregularFiles(t *testing.T) {
	valid := []byte("pipeline: p\n")
	fsys := fstest.MapFS{
		"ok/p.yaml":       {Data: valid},
		"fifo.yaml":       {Data: valid, Mode: fs.ModeNamedPipe},
		"chardev.yaml":    {Data: valid, Mode: fs.ModeDevice | fs.ModeCharDevice},
		"blockdev.yaml":   {Data: valid, Mode: fs.ModeDevice},
		"socket.yaml":     {Data: valid, Mode: fs.ModeSocket},
		"irregular.yaml":  {Data: valid, Mode: fs.ModeIrregular},
		"dir/a.yaml":      {Data: []byte("pipeline: a\n")},
		"dir/b.yaml":      {Data: valid, Mode: fs.ModeNamedPipe},
		"dir/notes.fifo":  {Data: valid, Mode: fs.ModeNamedPipe}, // not a contract name: skipped
		"dir/z-dev.yml":   {Data: valid, Mode: fs.ModeDevice | fs.ModeCharDevice},
		"skipped/a.yaml":  {Data: []byte("pipeline: a\n")},
		"skipped/x.fifo":  {Data: valid, Mode: fs.ModeNamedPipe},
		"skipped/README":  {Data: valid, Mode: fs.ModeDevice},
		"skipped/.h.yaml": {Data: valid, Mode: fs.ModeNamedPipe},
	}
	tests := []struct {
		path string
		err  string // "" for success
	}{
		{"ok/p.yaml", ""},
		{"skipped", ""},
		{"fifo.yaml", "loading contract fifo.yaml: a named pipe (FIFO), not a regular file: contracts and holiday lists are read from regular files only"},
		{"chardev.yaml", "loading contract chardev.yaml: a character device, not a regular file: contracts and holiday lists are read from regular files only"},
		{"blockdev.yaml", "loading contract blockdev.yaml: a device, not a regular file: contracts and holiday lists are read from regular files only"},
		{"socket.yaml", "loading contract socket.yaml: a socket, not a regular file: contracts and holiday lists are read from regular files only"},
		{"irregular.yaml", "loading contract irregular.yaml: an irregular file, not a regular file: contracts and holiday lists are read from regular files only"},
		{"dir", "loading contract dir/b.yaml: a named pipe (FIFO), not a regular file: contracts and holiday lists are read from regular files only\n" +
			"loading contract dir/z-dev.yml: a character device, not a regular file: contracts and holiday lists are read from regular files only"},
	}
	for _, tt := range tests {
		s, err := contract.LoadFS(fsys, tt.path)
		switch {
		case tt.err == "" && (err != nil || s.Len() != 1):
			t.Errorf("LoadFS(%s) = %v, %v; want one contract", tt.path, s, err)
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("LoadFS(%s) error\n got %v\nwant %s", tt.path, err, tt.err)
		}
	}
}

// endlessFS holds one file that says it is a small regular file and never
// ends, and counts what is read from it.
type endlessFS struct{ read *int64 }

func (e endlessFS) Open(name string) (fs.File, error) {
	if name != "x.yaml" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return endlessFile{e.read}, nil
}

type endlessFile struct{ read *int64 }

func (f endlessFile) Stat() (fs.FileInfo, error) { return smallFileInfo{}, nil }
func (f endlessFile) Close() error               { return nil }

func (f endlessFile) Read(p []byte) (int, error) {
	// Stop a reader that ignores the limit before it takes the machine's
	// memory: four limits is proof enough.
	if *f.read > 4*contract.MaxFileSize {
		return 0, errors.New("read past four times the limit")
	}
	for i := range p {
		p[i] = '#'
	}
	*f.read += int64(len(p))
	return len(p), nil
}

type smallFileInfo struct{}

func (smallFileInfo) Name() string       { return "x.yaml" }
func (smallFileInfo) Size() int64        { return 12 }
func (smallFileInfo) Mode() fs.FileMode  { return 0o644 }
func (smallFileInfo) ModTime() time.Time { return time.Time{} }
func (smallFileInfo) IsDir() bool        { return false }
func (smallFileInfo) Sys() any           { return nil }

// TestLoadFSReadsThroughALimit checks that a file growing past the limit
// (or lying about its size) is read no further than one byte past it.
func TestLoadFSReadsThroughALimit(t *testing.T) {
	var read int64
	_, err := contract.LoadFS(endlessFS{&read}, "x.yaml")
	want := "x.yaml: file is over the 1048576-byte limit"
	if err == nil || err.Error() != want {
		t.Errorf("LoadFS of an endless file: error\n got %v\nwant %s", err, want)
	}
	if read > contract.MaxFileSize+1 {
		t.Errorf("LoadFS read %d bytes, want at most %d", read, contract.MaxFileSize+1)
	}
	big := fstest.MapFS{"big.yaml": {Data: []byte("pipeline: p\n" + strings.Repeat("#", contract.MaxFileSize))}}
	if _, err := contract.LoadFS(big, "big.yaml"); err == nil || err.Error() != "big.yaml: file is over the 1048576-byte limit" {
		t.Errorf("LoadFS of a large file: error %v", err)
	}
}

// TestLoadFSRealSpecialFiles uses the operating system's special files: a
// FIFO (opening it for reading would block until a writer comes) and a
// symbolic link to /dev/zero (reading it never ends). A symbolic link to
// a regular file, the way Kubernetes mounts a ConfigMap, still loads.
func TestLoadFSRealSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"fifo", "zero", "link"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(dir, "fifo", "x.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero", "x.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "real.yaml"), []byte("pipeline: p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../real.yaml", filepath.Join(dir, "link", "x.yaml")); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	tests := []struct {
		path string
		err  string
	}{
		{"fifo/x.yaml", "loading contract fifo/x.yaml: a named pipe (FIFO), not a regular file: contracts and holiday lists are read from regular files only"},
		{"fifo", "loading contract fifo/x.yaml: a named pipe (FIFO), not a regular file: contracts and holiday lists are read from regular files only"},
		{"zero/x.yaml", "loading contract zero/x.yaml: a character device, not a regular file: contracts and holiday lists are read from regular files only"},
		{"zero", "loading contract zero/x.yaml: a character device, not a regular file: contracts and holiday lists are read from regular files only"},
		{"link", ""},
		{"link/x.yaml", ""},
	}
	for _, tt := range tests {
		type result struct {
			s   *contract.Set
			err error
		}
		done := make(chan result, 1)
		go func() {
			s, err := contract.LoadFS(fsys, tt.path)
			done <- result{s, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(20 * time.Second):
			// A reader is blocked opening the FIFO: a writer that comes and
			// goes releases it (and the reader then sees an empty file).
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatalf("LoadFS(%s) still running after 20s: it opened a special file", tt.path)
		}
		switch {
		case tt.err == "" && (r.err != nil || r.s.Len() != 1):
			t.Errorf("LoadFS(%s) = %v, %v; want one contract", tt.path, r.s, r.err)
		case tt.err != "" && (r.err == nil || r.err.Error() != tt.err):
			t.Errorf("LoadFS(%s) error\n got %v\nwant %s", tt.path, r.err, tt.err)
		}
	}
}

var _ io.Reader = endlessFile{}

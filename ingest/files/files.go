// Package files probes data and signal files for the watcher and for
// restore-signal and verify: whether a file exists, is a regular file and
// readable, its size and modification time, its rows (lines of CSV or TSV,
// with or without a header, gzip-compressed or not) and its sha256, all in
// one streaming pass; whether it is still growing; and writes a completion
// signal atomically.
//
// Deciding what the facts mean is the analyzer's job (analyzer/remedy);
// this package only measures.
package files

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Format says how rows are counted.
type Format int8

// Formats.
const (
	// Lines counts lines: TSV, plain text, anything without quoting.
	Lines Format = iota
	// CSV counts records: a newline inside a double-quoted field is part
	// of the field (RFC 4180), not the end of a row.
	CSV
)

// FormatOf returns the format a file name suggests: CSV for .csv and
// .csv.gz, Lines otherwise.
func FormatOf(name string) Format {
	n := strings.TrimSuffix(strings.ToLower(name), ".gz")
	if strings.HasSuffix(n, ".csv") {
		return CSV
	}
	return Lines
}

// Options says how to count a file's rows.
type Options struct {
	Format Format
	// Header: the first line is a header, not a row (contract rows.header).
	Header bool
}

// Facts is what a probe found. A file that could not be read has Err set
// and its counts are zero: never read a zero Rows without checking Err.
type Facts struct {
	Path     string
	Exists   bool
	Regular  bool
	Readable bool
	Size     int64
	ModTime  time.Time
	Gzip     bool
	Rows     int64
	// Checksum is "sha256:" and the hex digest of the file's bytes as
	// stored (compressed, for a gzip file).
	Checksum string
	// Err says why the file could not be read or counted, "" when it was.
	Err string
}

// bufSize is the read size: large enough that a read is one system call
// per MiB, small enough to stay in cache while hashed and counted.
const bufSize = 1 << 20

// Probe stats path and, for a regular file, reads it once: rows and
// sha256. A symbolic link is not followed (ErrSymlink in Facts.Err). It returns an error only when ctx ends; anything wrong with the
// file is in Facts.Err.
func Probe(ctx context.Context, path string, opts Options) (Facts, error) {
	f := Facts{Path: path}
	file, st, err := openRegular(path)
	if st != nil {
		f.Exists, f.Size, f.ModTime = true, st.Size(), st.ModTime()
	}
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			f.Err = "does not exist"
		default:
			f.Err = err.Error()
		}
		return f, nil
	}
	f.Regular = true
	defer file.Close()
	c, err := count(ctx, file, opts, f.Size)
	if err != nil {
		if ctx.Err() != nil {
			return f, ctx.Err()
		}
		f.Err = err.Error()
		return f, nil
	}
	f.Readable, f.Rows, f.Checksum, f.Gzip = true, c.Rows, c.Checksum, c.Gzip
	if c.Bytes != f.Size {
		// The file changed while it was read: the counts describe no
		// single state of it.
		f.Readable = false
		f.Err = fmt.Sprintf("changed while read (%d bytes at stat, %d read): still being written?", f.Size, c.Bytes)
	}
	return f, nil
}

// Counts is what Count measured.
type Counts struct {
	Rows     int64
	Bytes    int64 // bytes read, as stored
	Checksum string
	Gzip     bool
}

// Count reads r to the end: the sha256 of its bytes and its rows (of the
// decompressed content when r is gzip, recognised by its magic bytes).
func Count(ctx context.Context, r io.Reader, opts Options) (Counts, error) {
	return count(ctx, r, opts, bufSize)
}

// count is Count with buffers sized for a file of about size bytes: a
// watcher probes thousands of small files, and 1 MiB buffers for each
// would cost more than reading them.
func count(ctx context.Context, r io.Reader, opts Options, size int64) (Counts, error) {
	n := int(min(max(size+1, 4096), bufSize))
	h := sha256.New()
	cr := &countingReader{r: r, ctx: ctx}
	raw := bufio.NewReaderSize(io.TeeReader(cr, h), n)
	var out Counts
	magic, _ := raw.Peek(2)
	rc := rowCounter{csv: opts.Format == CSV, buf: make([]byte, n)}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		out.Gzip = true
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return out, fmt.Errorf("gzip: %w", err)
		}
		if err := rc.read(zr); err != nil {
			return out, fmt.Errorf("gzip: %w", err)
		}
		// Hash whatever follows the compressed stream, too: the checksum
		// is of the file.
		if _, err := io.Copy(io.Discard, raw); err != nil {
			return out, err
		}
	} else if err := rc.read(raw); err != nil {
		return out, err
	}
	out.Rows = rc.rows(opts.Header)
	out.Bytes = cr.n
	out.Checksum = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return out, nil
}

type countingReader struct {
	r   io.Reader
	ctx context.Context
	n   int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// rowCounter counts newlines, outside quotes for CSV.
type rowCounter struct {
	csv     bool
	buf     []byte
	inQuote bool
	lines   int64
	any     bool // any byte seen
	last    byte
}

func (rc *rowCounter) read(r io.Reader) error {
	buf := rc.buf
	for {
		n, err := r.Read(buf)
		if n > 0 {
			rc.add(buf[:n])
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (rc *rowCounter) add(b []byte) {
	rc.any = true
	rc.last = b[len(b)-1]
	if !rc.csv || (!rc.inQuote && bytes.IndexByte(b, '"') < 0) {
		rc.lines += int64(bytes.Count(b, []byte{'\n'}))
		return
	}
	for len(b) > 0 {
		if rc.inQuote {
			i := bytes.IndexByte(b, '"')
			if i < 0 {
				return
			}
			rc.inQuote = false
			b = b[i+1:]
			continue
		}
		i := bytes.IndexByte(b, '"')
		if i < 0 {
			rc.lines += int64(bytes.Count(b, []byte{'\n'}))
			return
		}
		rc.lines += int64(bytes.Count(b[:i], []byte{'\n'}))
		rc.inQuote = true
		b = b[i+1:]
	}
}

// rows is the number of records: lines, plus a last line without its
// newline, minus the header.
func (rc *rowCounter) rows(header bool) int64 {
	n := rc.lines
	if rc.any && rc.last != '\n' {
		n++
	}
	if header && n > 0 {
		n--
	}
	return n
}

// Stat is a file's size and modification time: what stability compares.
type Stat struct {
	Size    int64
	ModTime time.Time
}

// StatOf returns path's size and modification time.
// A link is not followed: its own stat is returned.
func StatOf(path string) (Stat, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return Stat{}, err
	}
	return Stat{Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Stable reports whether path keeps its size and modification time over
// window: a copier that writes in place is done only when the file stops
// changing. It returns the two stats it compared.
func Stable(ctx context.Context, path string, window time.Duration) (bool, Stat, Stat, error) {
	a, err := StatOf(path)
	if err != nil {
		return false, Stat{}, Stat{}, err
	}
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, a, Stat{}, ctx.Err()
	case <-t.C:
	}
	b, err := StatOf(path)
	if err != nil {
		return false, a, Stat{}, err
	}
	return a == b, a, b, nil
}

// tempSuffixes are the endings copiers and writers give a file before it
// is final: NAME.tmp, NAME.part, NAME.partial, NAME.filepart (WinSCP),
// NAME.crdownload, NAME.inprogress.
var tempSuffixes = []string{".tmp", ".temp", ".part", ".partial", ".filepart", ".crdownload", ".inprogress", ".writing"}

// FinalOf returns the final name a temporary file name stands for, and
// false when name does not look temporary. Recognised: NAME + one of the
// temp suffixes (optionally followed by more, NAME.tmp.12345), a dot
// file .NAME.XXXXXX (rsync) or .NAME + suffix, and NAME~.
func FinalOf(name string) (string, bool) {
	n := name
	hidden := strings.HasPrefix(n, ".")
	if hidden {
		n = n[1:]
	}
	low := strings.ToLower(n)
	for _, s := range tempSuffixes {
		if i := strings.LastIndex(low, s); i > 0 && (i+len(s) == len(low) || low[i+len(s)] == '.' || low[i+len(s)] == '-') {
			return n[:i], true
		}
	}
	if strings.HasSuffix(n, "~") && len(n) > 1 {
		return n[:len(n)-1], true
	}
	if hidden {
		// rsync: .NAME.XXXXXX, six random characters.
		if i := strings.LastIndexByte(n, '.'); i > 0 && len(n)-i-1 == 6 {
			return n[:i], true
		}
	}
	return "", false
}

// TempsOf lists the files in dir that are temporary copies of name (see
// FinalOf): a copy in progress.
func TempsOf(dir, name string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if final, ok := FinalOf(e.Name()); ok && final == name {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Outcome is what WriteAtomic did.
type Outcome int8

// Outcomes.
const (
	// Written: the file did not exist and now holds the content.
	Written Outcome = iota + 1
	// Unchanged: the file already held exactly the content; nothing was
	// written.
	Unchanged
	// Conflict: the file exists with other content; nothing was written.
	Conflict
)

// WriteAtomic creates dir/name holding content, or finds it already
// there. Readers never see a partial file: the content goes to a
// temporary file in the same directory, is synced, and is renamed into
// place without replacing anything (renameat2 RENAME_NOREPLACE, or a hard
// link where that is not supported), then the directory is synced so the
// name survives a crash. An existing file is never overwritten.
//
// mark, when not empty, is set on the file as the extended attribute
// MarkAttr before the rename (see Mark): who wrote the file, for watchers
// that would otherwise take it for a delivery.
func WriteAtomic(dir, name string, content []byte, perm os.FileMode, mark string) (Outcome, error) {
	return CreateAtomic(dir, name, content, perm, mark, nil)
}

// tempPattern is the name of WriteAtomic's temporary file for name
// (os.CreateTemp replaces the '*'): .NAME.tmp-*, which watchers know as
// a copy of NAME in progress (FinalOf), or, when that would be longer than
// a file name may be, the short .handoff-*.tmp, so that a final name of up
// to 255 bytes can always be written.
func tempPattern(name string) string {
	const room = 255 - len(".") - len(".tmp-") - 10 // os.CreateTemp's random part is at most 10 digits
	if len(name) <= room {
		return "." + name + ".tmp-*"
	}
	return ".handoff-*.tmp"
}

// CreateAtomic is WriteAtomic with a last check: before, when not nil, is
// called after the temporary file is synced and immediately before the
// rename into place; an error from it abandons the write (nothing is
// created) and is returned as it is. It is how a writer refuses when
// what it proved has changed meanwhile.
func CreateAtomic(dir, name string, content []byte, perm os.FileMode, mark string, before func() error) (Outcome, error) {
	final := filepath.Join(dir, name)
	if o, done, err := compare(final, content); done || err != nil {
		return o, err
	}
	tmp, err := os.CreateTemp(dir, tempPattern(name))
	if err != nil {
		return 0, fmt.Errorf("create a temporary file in %s: %w", dir, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // gone after the rename; cleans up on failure
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("write %s: %w", tmpName, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("chmod %s: %w", tmpName, err)
	}
	if mark != "" {
		// Best effort: a file system without user extended attributes
		// just leaves the signal unmarked.
		_ = setMark(tmp, mark)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("fsync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("close %s: %w", tmpName, err)
	}
	if before != nil {
		if err := before(); err != nil {
			return 0, err
		}
	}
	if err := renameNoReplace(tmpName, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Someone else created it meanwhile: theirs stands.
			o, _, cerr := compare(final, content)
			return o, cerr
		}
		return 0, fmt.Errorf("rename %s to %s: %w", tmpName, final, err)
	}
	if err := syncDir(dir); err != nil {
		return Written, fmt.Errorf("fsync directory %s after creating %s: %w", dir, name, err)
	}
	return Written, nil
}

// compare says whether final exists, and if so whether it holds content.
func compare(final string, content []byte) (Outcome, bool, error) {
	st, err := os.Lstat(final)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, true, fmt.Errorf("stat %s: %w", final, err)
	}
	if !st.Mode().IsRegular() || st.Size() != int64(len(content)) {
		return Conflict, true, nil
	}
	have, err := os.ReadFile(final)
	if err != nil {
		return 0, true, fmt.Errorf("read existing %s: %w", final, err)
	}
	if bytes.Equal(have, content) {
		return Unchanged, true, nil
	}
	return Conflict, true, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

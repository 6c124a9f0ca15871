// Package restore is the edge of the remediation: it measures the batch's
// files at the receiver, proves that a signal.restored can be recorded,
// writes the missing completion signal (refusing if the data file changed
// since it was proven), records the restore, and waits for the consumer
// before verify. What the facts mean is decided by analyzer/remedy; this
// package only measures, writes and records, in that order.
//
// It lives in ingest because what it brings in is an event: the
// signal.restored that says who restored which signal, why, and over
// which verified file.
package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/handoff-dev/handoff/analyzer/remedy"
	"github.com/handoff-dev/handoff/ingest/files"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/model/manifest"
)

// Identity is what a data file was when it was proven: the file (device
// and inode), its size, and when its content and its metadata last
// changed. A rewrite, even of the same size with the modification time
// set back, changes the change time, which user space cannot set: so an
// equal Identity is the cheap equivalent of an equal hash.
type Identity struct {
	Dev, Ino uint64
	Size     int64
	ModTime  time.Time
	Change   time.Time
}

// identityOf returns fi's Identity.
func identityOf(fi fs.FileInfo) Identity {
	id := Identity{Size: fi.Size(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.Dev, id.Ino = uint64(st.Dev), st.Ino
		id.Change = time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
	}
	return id
}

func (id Identity) String() string {
	return fmt.Sprintf("inode %d:%d, %d bytes, modified %s, changed %s", id.Dev, id.Ino, id.Size,
		id.ModTime.UTC().Format(time.RFC3339Nano), id.Change.UTC().Format(time.RFC3339Nano))
}

// Proof is what Probe measured of the data file, to be checked again
// right before the signal is written.
type Proof struct {
	Path string
	// Identity is the data file's when it was read (zero when it was not
	// readable: then nothing is written anyway).
	Identity Identity
}

// ChangedError is Recheck's answer when the data file is no longer the
// one proven.
type ChangedError struct {
	Path    string
	Was, Is Identity
	Err     error // why it could not be stat'ed, when it could not
}

func (e *ChangedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("the data file %s changed since it was proven: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("the data file %s changed since it was proven: it was %s, it is %s", e.Path, e.Was, e.Is)
}

// Recheck returns a *ChangedError when the data file is no longer the one
// that was proven (another file under the name, another size, another
// modification or change time), nil when it is.
func (p Proof) Recheck() error {
	fi, err := os.Lstat(p.Path)
	if err != nil {
		return &ChangedError{Path: p.Path, Was: p.Identity, Err: err}
	}
	if now := identityOf(fi); now != p.Identity {
		return &ChangedError{Path: p.Path, Was: p.Identity, Is: now}
	}
	return nil
}

// Probe measures the batch's data file and signal in dir, under the names
// c derives from key. The data file must hold still for settle (zero: not
// waited for). Names are never followed when they are links: a link is
// reported as such, with its target.
func Probe(ctx context.Context, dir string, c *contract.Contract, key model.BatchKey, settle time.Duration) (remedy.Facts, Proof, error) {
	f := remedy.Facts{Dir: dir}
	var proof Proof
	if name, ok := c.ArtifactName(key); ok {
		a, id, err := probeFile(ctx, dir, name, files.Options{Format: files.FormatOf(name), Header: c.Rows.Header}, settle, false)
		if err != nil {
			return f, proof, err
		}
		f.Artifact, proof = a, Proof{Path: filepath.Join(dir, name), Identity: id}
	}
	if name, ok := c.SignalName(key); ok {
		s, _, err := probeFile(ctx, dir, name, files.Options{}, 0, true)
		if err != nil {
			return f, proof, err
		}
		f.Signal = s
	}
	return f, proof, nil
}

// probeFile probes dir/name: its temporary copies, the name itself
// without following a link, its stability over settle, its rows and
// checksum read through one open file whose identity is taken before
// and after the read, and, for a signal, its content.
func probeFile(ctx context.Context, dir, name string, opts files.Options, settle time.Duration, content bool) (remedy.File, Identity, error) {
	out := remedy.File{Name: name}
	if err := contract.CheckFileName(name); err != nil {
		// No file system holds it: nothing to look at.
		out.Err = err.Error()
		return out, Identity{}, nil
	}
	path := filepath.Join(dir, name)
	temps, err := files.TempsOf(dir, name)
	if err != nil {
		return out, Identity{}, fmt.Errorf("list %s: %w", dir, err)
	}
	out.Temps = temps
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		out.Err = "does not exist"
		return out, Identity{}, nil
	case err != nil:
		out.Err = err.Error()
		return out, Identity{}, nil
	}
	out.Exists, out.Size, out.ModTime = true, fi.Size(), fi.ModTime()
	if fi.Mode()&fs.ModeSymlink != 0 {
		out.Link, _ = os.Readlink(path)
		_, serr := os.Stat(path)
		out.Dangling = errors.Is(serr, fs.ErrNotExist)
		out.Err = "a symbolic link"
		return out, Identity{}, nil
	}
	if !fi.Mode().IsRegular() {
		out.Err = "not a regular file (" + fi.Mode().Type().String() + ")"
		return out, Identity{}, nil
	}
	out.Regular = true
	if settle > 0 {
		stable, _, _, err := files.Stable(ctx, path, settle)
		if err != nil && ctx.Err() != nil {
			return out, Identity{}, ctx.Err()
		}
		out.Stable, out.Settle = stable, settle
	}
	id, err := read(ctx, path, opts, &out, content)
	return out, id, err
}

// read opens path without following a link (and without blocking on a
// FIFO swapped in), counts and hashes it, and returns its identity: the
// file read must be the one stat'ed, unchanged from before the read to
// after it.
func read(ctx context.Context, path string, opts files.Options, out *remedy.File, content bool) (Identity, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		out.Err = "cannot open: " + err.Error()
		return Identity{}, nil
	}
	file := os.NewFile(uintptr(fd), path)
	defer file.Close()
	before, err := file.Stat()
	if err != nil || !before.Mode().IsRegular() {
		out.Regular, out.Err = false, "replaced while probed: no longer a regular file"
		return Identity{}, nil
	}
	c, err := files.Count(ctx, file, opts)
	if err != nil {
		if ctx.Err() != nil {
			return Identity{}, ctx.Err()
		}
		out.Err = err.Error()
		return Identity{}, nil
	}
	after, err := file.Stat()
	if err != nil {
		out.Err = err.Error()
		return Identity{}, nil
	}
	id := identityOf(after)
	if identityOf(before) != id || c.Bytes != id.Size {
		out.Err = fmt.Sprintf("changed while read (%s before, %s after, %d bytes read): still being written?", identityOf(before), id, c.Bytes)
		return Identity{}, nil
	}
	out.Readable, out.Size, out.ModTime, out.Rows, out.Checksum = true, id.Size, id.ModTime, c.Rows, c.Checksum
	if content && id.Size <= manifest.MaxSize {
		// From the file read, not the name: the name may have changed.
		b := make([]byte, id.Size)
		if _, err := file.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
			return id, fmt.Errorf("read signal %s: %w", path, err)
		}
		out.Content = b
	}
	return id, nil
}

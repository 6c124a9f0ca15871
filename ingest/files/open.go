package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrSymlink is a path that is a symbolic link. Links are never followed:
// one planted in a watched or receiving directory could point anywhere
// (/etc/shadow) and have its rows, size and checksum reported as a
// delivery.
var ErrSymlink = errors.New("a symbolic link, not followed")

// openRegular opens path for reading only when it is a regular file and
// not a link: Lstat first, then an open that does not follow a link (a
// link swapped in after the Lstat fails the open) nor blocks on a FIFO,
// then the open file's own stat, which must be the file Lstat saw.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, st, ErrSymlink
	}
	if !st.Mode().IsRegular() {
		return nil, st, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, st, fmt.Errorf("cannot open: %w", err)
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, st, fmt.Errorf("cannot stat the open file: %w", err)
	}
	if !fst.Mode().IsRegular() || !os.SameFile(st, fst) {
		f.Close()
		return nil, st, errors.New("replaced while opened")
	}
	return f, fst, nil
}

// ReadSmall reads a small file, such as a signal or a manifest, whole:
// a regular file, not a link (ErrSymlink), at most limit bytes. The size
// is checked before anything is read, and the read goes through the limit,
// so a huge (or sparse, or growing) file costs no memory.
func ReadSmall(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, st, fmt.Errorf("%d bytes, over the limit of %d: not read", st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, st, fmt.Errorf("read: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, st, fmt.Errorf("grew past the limit of %d bytes while read: not read", limit)
	}
	return b, st, nil
}

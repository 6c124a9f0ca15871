package contract

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// LoadFS loads the contracts at name in fsys: one contract file, or a
// directory whose *.yaml and *.yml files are each one contract.
// Subdirectories and other files are skipped, so a README may sit beside
// the contracts. Every file is parsed and all errors are returned together;
// two files for one pipeline are an error naming both. An empty directory
// gives an empty Set: every pipeline then gets the default contract.
//
// Only regular files are read (symbolic links are followed), each through
// a limit of MaxFileSize: a FIFO or a device named like a contract is an
// error naming it, never opened.
//
// The caller chooses the file system (os.DirFS, embed.FS, fstest.MapFS), so
// this package does no I/O of its own.
func LoadFS(fsys fs.FS, name string) (*Set, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("loading contracts: %w", err)
	}
	if !info.IsDir() {
		c, err := loadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		return NewSet(c)
	}
	entries, err := fs.ReadDir(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("loading contracts: %w", err)
	}
	var (
		cs   []*Contract
		errs []error
	)
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !isYAML(e.Name()) {
			continue
		}
		c, err := loadFile(fsys, path.Join(name, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cs = append(cs, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return NewSet(cs...)
}

func isYAML(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// loadFile reads one contract file. Only a regular file is opened (a
// symbolic link is followed to what it names): opening a FIFO blocks until
// a writer comes, and a device such as /dev/zero never ends. The read
// stops one byte past MaxFileSize whatever the file claims its size is.
// A file swapped for a special one between the Stat and the Open is caught
// by the second check, after the Open: fs.FS offers no way to open without
// blocking, so that window remains.
func loadFile(fsys fs.FS, name string) (*Contract, error) {
	data, err := readRegular(fsys, name)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, fmt.Errorf("loading contract %s: %w", name, err)
	}
	return parse(fsys, name, data)
}

// readRegular reads a regular file of at most MaxFileSize bytes: contract
// files and the holiday lists they name.
func readRegular(fsys fs.FS, name string) ([]byte, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(name, info.Mode()); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil {
		return nil, err
	} else if err := checkRegular(name, info.Mode()); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, &ParseError{Source: name, Err: fmt.Errorf("file is over the %d-byte limit", MaxFileSize)}
	}
	return data, nil
}

// checkRegular refuses anything but a regular file, saying what it is.
func checkRegular(name string, mode fs.FileMode) error {
	if mode.IsRegular() {
		return nil
	}
	var what string
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeSymlink != 0:
		what = "a symbolic link the file system does not follow"
	case mode.IsDir():
		what = "a directory"
	default:
		what = "an irregular file"
	}
	return fmt.Errorf("%s, not a regular file: contracts and holiday lists are read from regular files only", what)
}

package files

import (
	"errors"
	"io/fs"
	"os"
)

// linkRename gives oldpath's file the name newpath, failing with
// fs.ErrExist when newpath exists, and removes oldpath.
func linkRename(oldpath, newpath string) error {
	if err := os.Link(oldpath, newpath); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return os.ErrExist
		}
		return err
	}
	return os.Remove(oldpath)
}

//go:build !linux

package files

// renameNoReplace renames oldpath to newpath unless newpath exists
// (fs.ErrExist then), by link-then-unlink.
func renameNoReplace(oldpath, newpath string) error { return linkRename(oldpath, newpath) }

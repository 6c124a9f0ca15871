package files

import (
	"io/fs"
	"syscall"
	"time"
)

// ChangeTime returns when fi's file last changed name, content or
// metadata (ctime on Linux: a rename into place sets it), falling back to
// the modification time.
func ChangeTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		c := time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
		if c.After(fi.ModTime()) {
			return c
		}
	}
	return fi.ModTime()
}

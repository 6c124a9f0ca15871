//go:build !linux

package files

import (
	"io/fs"
	"time"
)

// ChangeTime returns fi's modification time (ctime is read on Linux only).
func ChangeTime(fi fs.FileInfo) time.Time { return fi.ModTime() }

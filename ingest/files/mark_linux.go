package files

import (
	"os"

	"golang.org/x/sys/unix"
)

// MarkAttr is the extended attribute restore-signal sets on a signal it
// writes: the id of its signal.restored event.
const MarkAttr = "user.handoff.restored"

func setMark(f *os.File, value string) error {
	return unix.Fsetxattr(int(f.Fd()), MarkAttr, []byte(value), 0)
}

// Mark returns the MarkAttr of path ("" when it has none, or the file
// system keeps no extended attributes), of a link itself, not followed.
// Anyone who can write the file can set it, and cp -a carries it: it is a
// claim to check against the recorded event it names, not a proof.
func Mark(path string) string {
	buf := make([]byte, 128)
	n, err := unix.Lgetxattr(path, MarkAttr, buf)
	if err != nil || n <= 0 {
		return ""
	}
	return string(buf[:n])
}

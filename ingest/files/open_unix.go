//go:build unix

package files

import "syscall"

// openFlags: fail on a link instead of following it, and do not block
// opening a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

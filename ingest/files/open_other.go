//go:build !unix

package files

// openFlags: no O_NOFOLLOW here; openRegular's Lstat and SameFile check
// stand in for it.
const openFlags = 0

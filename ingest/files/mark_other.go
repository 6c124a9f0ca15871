//go:build !linux

package files

import "os"

// MarkAttr is the extended attribute restore-signal sets on a signal it
// writes (Linux only).
const MarkAttr = "user.handoff.restored"

func setMark(*os.File, string) error { return nil }

// Mark returns "" off Linux: no marks are kept.
func Mark(string) string { return "" }

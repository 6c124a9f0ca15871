// Package remedy plans the seed case's fix and checks it afterwards
// (docs/remediation.md): restoring a missing completion signal only once
// every precondition is proven, against the recorded events and against
// the real files at the receiver, and verifying end to end after.
//
// It is pure: the caller replays the events (analyzer/replay), probes the
// files (ingest/files) and hands both in; Restore and Verify only decide.
// Every precondition and every check names its evidence: event ids, and in
// words what the files showed.
package remedy

import (
	"strconv"
	"time"
)

// File is what a probe of one file at the receiver found.
type File struct {
	// Name is the file's name in the receiver directory.
	Name     string
	Exists   bool
	Regular  bool
	Readable bool
	Size     int64
	ModTime  time.Time
	Rows     int64 // counted rows, header excluded; meaningful when Readable
	Checksum string
	// Err says why the file could not be read ("" when it was).
	Err string
	// Stable is whether size and modification time held over the settle
	// window; Settle is that window (zero when stability was not probed).
	Stable bool
	Settle time.Duration
	// Temps lists temporary copies of this name beside it (NAME.tmp,
	// NAME.part, .NAME.XXXXXX): a copy in progress.
	Temps []string
	// Content is the file's bytes when it is a signal that exists (at most
	// manifest.MaxSize); nil otherwise.
	Content []byte
	// Link is the target of the name when it is a symbolic link (then
	// Exists is true and Regular false: a link is never followed, so a
	// file elsewhere never passes for one at the receiver); Dangling
	// says the target does not exist.
	Link     string
	Dangling bool
}

// Facts is what the files at the receiver show.
type Facts struct {
	// Dir is the receiver directory, as given.
	Dir      string
	Artifact File
	Signal   File
}

// describe says in words what a probe of f found.
func (f File) describe() string {
	switch {
	case !f.Exists:
		return strconv.Quote(f.Name) + " does not exist"
	case f.Link != "" && f.Dangling:
		return strconv.Quote(f.Name) + " is a dangling symbolic link: its target " + strconv.Quote(f.Link) + " does not exist"
	case f.Link != "":
		return strconv.Quote(f.Name) + " is a symbolic link to " + strconv.Quote(f.Link) + ", not a regular file in the receiver directory (links are not followed)"
	case !f.Regular:
		return strconv.Quote(f.Name) + " is not a regular file: " + f.Err
	case !f.Readable:
		return strconv.Quote(f.Name) + " is not readable: " + f.Err
	}
	return strconv.Quote(f.Name) + " " + strconv.FormatInt(f.Size, 10) + " bytes, " + strconv.FormatInt(f.Rows, 10) + " rows, " + f.Checksum
}

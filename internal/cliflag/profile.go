package cliflag

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
)

// CPUProfile is the --cpuprofile flag every command takes (environment
// HANDOFF_CPUPROFILE): a file to write a CPU profile of the run to, for
// `go tool pprof`. One spelling and one implementation for all commands.
type CPUProfile struct{ Path string }

// RegisterFlags defines --cpuprofile on fs, defaulting to
// HANDOFF_CPUPROFILE.
func (p *CPUProfile) RegisterFlags(fs *flag.FlagSet) {
	if p.Path == "" {
		p.Path = os.Getenv("HANDOFF_CPUPROFILE")
	}
	fs.StringVar(&p.Path, "cpuprofile", p.Path, "write a CPU profile of the run to this file, for go tool pprof; empty: none (HANDOFF_CPUPROFILE)")
}

// Start starts the profile (nothing when Path is empty) and returns what
// stops it and closes the file; call it once the command has done its work.
func (p CPUProfile) Start() (stop func() error, err error) {
	return StartCPUProfile(p.Path)
}

// StartCPUProfile starts a CPU profile written to path (nothing when path
// is empty) and returns what stops it and closes the file.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile (HANDOFF_CPUPROFILE): %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile (HANDOFF_CPUPROFILE) %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

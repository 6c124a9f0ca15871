package cliflag

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, env string
		args      []string
		want      string // file expected to hold a profile; "" none
		wantErr   bool
	}{
		{name: "unset", want: ""},
		{name: "environment", env: filepath.Join(dir, "env.pprof"), want: filepath.Join(dir, "env.pprof")},
		{name: "flag wins", env: filepath.Join(dir, "no.pprof"), args: []string{"--cpuprofile", filepath.Join(dir, "flag.pprof")}, want: filepath.Join(dir, "flag.pprof")},
		{name: "bad path", args: []string{"--cpuprofile", filepath.Join(dir, "missing", "x.pprof")}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HANDOFF_CPUPROFILE", tc.env)
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			var p CPUProfile
			p.RegisterFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			stop, err := p.Start()
			if tc.wantErr {
				if err == nil {
					stop()
					t.Fatal("no error for a file that cannot be created")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if p.Path != tc.want {
				t.Fatalf("path %q, want %q", p.Path, tc.want)
			}
			if tc.want != "" {
				if st, err := os.Stat(tc.want); err != nil || st.Size() == 0 {
					t.Fatalf("profile %s not written: %v", tc.want, err)
				}
			}
		})
	}
}

package files_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/handoff-dev/handoff/ingest/files"
)

func TestCountRows(t *testing.T) {
	for _, tt := range []struct {
		name    string
		content string
		opts    files.Options
		want    int64
	}{
		{"empty", "", files.Options{}, 0},
		{"empty with header", "", files.Options{Header: true}, 0},
		{"one line", "a\n", files.Options{}, 1},
		{"no final newline", "a\nb", files.Options{}, 2},
		{"header", "id,balance\n1,2\n3,4\n", files.Options{Format: files.CSV, Header: true}, 2},
		{"header only", "id,balance\n", files.Options{Header: true}, 0},
		{"crlf", "a\r\nb\r\n", files.Options{}, 2},
		{"csv newline in quotes", "id,note\n1,\"two\nlines\"\n2,x\n", files.Options{Format: files.CSV, Header: true}, 2},
		{"csv escaped quotes", "1,\"say \"\"hi\"\"\nthere\"\n2,x\n", files.Options{Format: files.CSV}, 2},
		{"tsv counts quotes as text", "1\t\"a\n2\tb\"\n", files.Options{Format: files.Lines}, 2},
		{"blank line is a row", "a\n\nb\n", files.Options{}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := files.Count(context.Background(), strings.NewReader(tt.content), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.Rows != tt.want || c.Bytes != int64(len(tt.content)) || c.Gzip {
				t.Fatalf("Count = %+v, want %d rows, %d bytes, not gzip", c, tt.want, len(tt.content))
			}
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write([]byte(tt.content))
			zw.Close()
			gz, err := files.Count(context.Background(), bytes.NewReader(z.Bytes()), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if gz.Rows != tt.want || !gz.Gzip || gz.Bytes != int64(z.Len()) {
				t.Fatalf("gzip: Count = %+v, want %d rows, gzip, %d bytes", gz, tt.want, z.Len())
			}
		})
	}
}

// TestCountCSVAcrossBuffers puts quoted newlines across the 1 MiB read
// boundary: the quote state must carry over.
func TestCountCSVAcrossBuffers(t *testing.T) {
	var b strings.Builder
	rows := 0
	for b.Len() < 3<<20 {
		b.WriteString("1,\"multi\nline\",x\n")
		rows++
	}
	c, err := files.Count(context.Background(), strings.NewReader(b.String()), files.Options{Format: files.CSV})
	if err != nil {
		t.Fatal(err)
	}
	if c.Rows != int64(rows) {
		t.Fatalf("rows %d, want %d", c.Rows, rows)
	}
}

func TestChecksum(t *testing.T) {
	// sha256("abc\n") as printed by sha256sum.
	c, err := files.Count(context.Background(), strings.NewReader("abc\n"), files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Checksum != "sha256:edeaaff3f1774ad2888673770c6d64097e391bc362d7d6fb34982ddf0efd18cb" {
		t.Fatalf("checksum %s", c.Checksum)
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.csv")
	os.WriteFile(ok, []byte("h\n1\n2\n"), 0o644)
	unreadable := filepath.Join(dir, "secret.csv")
	os.WriteFile(unreadable, []byte("1\n"), 0o000)
	os.Mkdir(filepath.Join(dir, "sub.csv"), 0o755)
	// A link to a readable file outside the directory: never followed, so
	// nothing of the file it points to is measured.
	outside := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(outside, []byte("root:x:0:0\n"), 0o644)
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name                      string
		path                      string
		exists, regular, readable bool
		rows                      int64
		errHas                    string
	}{
		{"readable", ok, true, true, true, 2, ""},
		{"missing", filepath.Join(dir, "none.csv"), false, false, false, 0, "does not exist"},
		{"directory", filepath.Join(dir, "sub.csv"), true, false, false, 0, "not a regular file"},
		{"symlink out of the directory", link, true, false, false, 0, "symbolic link"},
		{"fifo", fifo, true, false, false, 0, "not a regular file"},
		{"unreadable", unreadable, true, true, false, 0, "cannot open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "unreadable" && os.Geteuid() == 0 {
				// root reads any file: make it unreadable another way.
				os.Remove(unreadable)
				os.Symlink(filepath.Join(dir, "sub.csv"), unreadable)
				tt.regular, tt.errHas = false, "symbolic link"
			}
			f, err := files.Probe(context.Background(), tt.path, files.Options{Header: true})
			if err != nil {
				t.Fatal(err)
			}
			if f.Exists != tt.exists || f.Regular != tt.regular || f.Readable != tt.readable || f.Rows != tt.rows || !strings.Contains(f.Err, tt.errHas) || (tt.errHas == "") != (f.Err == "") {
				t.Fatalf("Probe = %+v", f)
			}
		})
	}
}

func TestFinalOf(t *testing.T) {
	for _, tt := range []struct{ in, final string }{
		{"a_20260930.csv.tmp", "a_20260930.csv"},
		{"a_20260930.csv.part", "a_20260930.csv"},
		{"a_20260930.csv.filepart", "a_20260930.csv"},
		{"a_20260930.csv.tmp.12345", "a_20260930.csv"},
		{".a_20260930.csv.Xy12Ab", "a_20260930.csv"},
		{".a_20260930.csv.tmp-998877", "a_20260930.csv"},
		{"a_20260930.csv~", "a_20260930.csv"},
		{"a_20260930.csv", ""},
		{".hidden", ""},
		{"template.csv", ""},
	} {
		got, ok := files.FinalOf(tt.in)
		if got != tt.final || ok != (tt.final != "") {
			t.Errorf("FinalOf(%q) = %q %v, want %q", tt.in, got, ok, tt.final)
		}
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	o, err := files.WriteAtomic(dir, "x.flag", []byte("m\n"), 0o644, "")
	if err != nil || o != files.Written {
		t.Fatalf("first write: %v %v", o, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.flag")); string(b) != "m\n" {
		t.Fatalf("content %q", b)
	}
	o, err = files.WriteAtomic(dir, "x.flag", []byte("m\n"), 0o644, "")
	if err != nil || o != files.Unchanged {
		t.Fatalf("second write: %v %v, want Unchanged", o, err)
	}
	o, err = files.WriteAtomic(dir, "x.flag", []byte("other\n"), 0o644, "")
	if err != nil || o != files.Conflict {
		t.Fatalf("other content: %v %v, want Conflict", o, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.flag")); string(b) != "m\n" {
		t.Fatalf("a conflict overwrote the file: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}

// TestWriteAtomicRace: of many writers racing for one name, exactly one
// writes and the rest find its content; none overwrites.
func TestWriteAtomicRace(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	outcomes := make([]files.Outcome, 16)
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := files.WriteAtomic(dir, "race.flag", nil, 0o644, "")
			if err != nil {
				t.Error(err)
			}
			outcomes[i] = o
		}()
	}
	wg.Wait()
	written := 0
	for _, o := range outcomes {
		switch o {
		case files.Written:
			written++
		case files.Unchanged:
		default:
			t.Errorf("outcome %v", o)
		}
	}
	if written != 1 {
		t.Fatalf("%d writers wrote, want 1", written)
	}
}

func TestWriteAtomicMark(t *testing.T) {
	dir := t.TempDir()
	if _, err := files.WriteAtomic(dir, "m.flag", nil, 0o644, "id-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := files.WriteAtomic(dir, "plain.flag", nil, 0o644, ""); err != nil {
		t.Fatal(err)
	}
	if got := files.Mark(filepath.Join(dir, "m.flag")); got != "id-1" {
		t.Fatalf("mark %q, want id-1 (a file system without user xattrs fails this: run the tests on one with them)", got)
	}
	if got := files.Mark(filepath.Join(dir, "plain.flag")); got != "" {
		t.Fatalf("unmarked file has mark %q", got)
	}
}

// TestReadSmall: a signal is read whole only when it is small: the size is
// checked before reading, so a 2 GiB sparse file is refused without being
// read (it used to be read into memory first); links are not followed.
func TestReadSmall(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "x.flag")
	os.WriteFile(small, []byte("ok\n"), 0o644)
	huge := filepath.Join(dir, "huge.flag")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	link := filepath.Join(dir, "link.flag")
	os.Symlink(small, link)
	for _, tt := range []struct {
		name, path, content, errHas string
	}{
		{"small", small, "ok\n", ""},
		{"2 GiB sparse", huge, "", "over the limit of 65536"},
		{"link", link, "", "symbolic link"},
		{"missing", filepath.Join(dir, "none"), "", "no such file"},
	} {
		b, _, err := files.ReadSmall(tt.path, 64<<10)
		if (err == nil) != (tt.errHas == "") || (err != nil && !strings.Contains(err.Error(), tt.errHas)) || string(b) != tt.content {
			t.Errorf("%s: ReadSmall = %q, %v; want %q, error with %q", tt.name, b, err, tt.content, tt.errHas)
		}
	}
}

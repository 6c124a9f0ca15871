package jsonl_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/handoff-dev/handoff/ingest/jsonl"
	"github.com/handoff-dev/handoff/model"
)

// ev returns a valid event line with event_id id (no line end).
func ev(id string) string {
	return fmt.Sprintf(`{"spec":"handoff/v1","event_id":%q,"type":"job.started","time":"2026-09-29T17:00:00.000Z","pipeline":"p","business_date":"2026-09-29","batch_id":"20260929","system":"producer","component":"c"}`, id)
}

const badDate = `{"spec":"handoff/v1","event_id":"x","type":"job.started","time":"2026-09-29T17:00:00.000Z","pipeline":"p","business_date":"2026-13-01","batch_id":"b","system":"producer"}`

// got is what fn saw for one line.
type got struct {
	line int
	id   string // event id, or "" for an error
	kind model.RejectKind
}

func collect(t *testing.T, r io.Reader, opts jsonl.Options) ([]got, jsonl.Stats, error) {
	t.Helper()
	var out []got
	st, err := jsonl.Read(context.Background(), r, opts, func(line int, e *model.Event, err error) error {
		if err != nil {
			var ve *model.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("line %d: error %v is not a *model.ValidationError", line, err)
			}
			out = append(out, got{line: line, kind: ve.Kind})
			return nil
		}
		out = append(out, got{line: line, id: e.ID})
		return nil
	})
	return out, st, err
}

func TestRead(t *testing.T) {
	huge := `{"spec":"handoff/v1","attrs":{"x":"` + strings.Repeat("a", model.MaxEventSize) + `"}}`
	tests := []struct {
		name   string
		input  string
		opts   jsonl.Options
		want   []got
		lines  int
		blank  int
		reject map[model.RejectKind]int
	}{
		{name: "empty", input: "", lines: 0},
		{name: "one", input: ev("a") + "\n", want: []got{{1, "a", ""}}, lines: 1},
		{name: "no trailing newline", input: ev("a") + "\n" + ev("b"), want: []got{{1, "a", ""}, {2, "b", ""}}, lines: 2},
		{name: "crlf", input: ev("a") + "\r\n" + ev("b") + "\r\n", want: []got{{1, "a", ""}, {2, "b", ""}}, lines: 2},
		{name: "blank lines", input: "\n" + ev("a") + "\n  \n\r\n\t\n" + ev("b") + "\n\n", want: []got{{2, "a", ""}, {6, "b", ""}}, lines: 7, blank: 5},
		{
			name:   "bad among good",
			input:  ev("a") + "\n{not json\n" + badDate + "\n" + `{"spec":"handoff/v1","event_id":"y","type":"nope"}` + "\n" + ev("b") + "\n[]\n",
			want:   []got{{1, "a", ""}, {2, "", model.RejectBadJSON}, {3, "", model.RejectBadValue}, {4, "", model.RejectUnknownType}, {5, "b", ""}, {6, "", model.RejectBadJSON}},
			lines:  6,
			reject: map[model.RejectKind]int{model.RejectBadJSON: 2, model.RejectBadValue: 1, model.RejectUnknownType: 1},
		},
		{
			name:   "huge line in a chunk",
			input:  ev("a") + "\n" + huge + "\n" + ev("b") + "\n",
			want:   []got{{1, "a", ""}, {2, "", model.RejectTooLarge}, {3, "b", ""}},
			lines:  3,
			reject: map[model.RejectKind]int{model.RejectTooLarge: 1},
		},
		{
			name:   "line longer than a chunk",
			input:  ev("a") + "\n" + strings.Repeat("x", 5000) + "\n" + ev("b") + "\n" + strings.Repeat("y", 3000) + "\r\n" + ev("c"),
			opts:   jsonl.Options{ChunkSize: 1024, MaxLineSize: 1000},
			want:   []got{{1, "a", ""}, {2, "", model.RejectTooLarge}, {3, "b", ""}, {4, "", model.RejectTooLarge}, {5, "c", ""}},
			lines:  5,
			reject: map[model.RejectKind]int{model.RejectTooLarge: 2},
		},
		{
			name:   "line longer than a chunk at EOF",
			input:  ev("a") + "\n" + strings.Repeat("x", 5000),
			opts:   jsonl.Options{ChunkSize: 1024, MaxLineSize: 1000},
			want:   []got{{1, "a", ""}, {2, "", model.RejectTooLarge}},
			lines:  2,
			reject: map[model.RejectKind]int{model.RejectTooLarge: 1},
		},
		{
			name:  "longest line fits exactly",
			input: ev("a") + strings.Repeat(" ", 1000-len(ev("a"))) + "\r\n" + ev("b"),
			opts:  jsonl.Options{ChunkSize: 1, MaxLineSize: 1000},
			want:  []got{{1, "a", ""}, {2, "b", ""}},
			lines: 2,
		},
	}
	for _, tt := range tests {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", tt.name, workers), func(t *testing.T) {
				opts := tt.opts
				opts.Workers = workers
				// OneByteReader exercises short reads.
				for _, r := range []io.Reader{strings.NewReader(tt.input), iotest.OneByteReader(strings.NewReader(tt.input))} {
					out, st, err := collect(t, r, opts)
					if err != nil {
						t.Fatalf("Read: %v", err)
					}
					if fmt.Sprint(out) != fmt.Sprint(tt.want) {
						t.Errorf("got  %v\nwant %v", out, tt.want)
					}
					if st.Lines != tt.lines || st.Blank != tt.blank {
						t.Errorf("Lines, Blank = %d, %d; want %d, %d", st.Lines, st.Blank, tt.lines, tt.blank)
					}
					if st.Bytes != int64(len(tt.input)) {
						t.Errorf("Bytes = %d, want %d", st.Bytes, len(tt.input))
					}
					events := 0
					for _, g := range tt.want {
						if g.id != "" {
							events++
						}
					}
					if st.Events != events {
						t.Errorf("Events = %d, want %d", st.Events, events)
					}
					if st.RejectedTotal() != len(tt.want)-events || fmt.Sprint(st.Rejected) != fmt.Sprint(nonNil(tt.reject)) {
						t.Errorf("Rejected = %v, want %v", st.Rejected, tt.reject)
					}
				}
			})
		}
	}
}

func nonNil(m map[model.RejectKind]int) map[model.RejectKind]int {
	if m == nil {
		return map[model.RejectKind]int{}
	}
	return m
}

// TestOrderAcrossChunks uses tiny chunks and several workers so that many
// chunks are decoded at once, and checks that lines arrive in order.
func TestOrderAcrossChunks(t *testing.T) {
	var b strings.Builder
	const n = 5000
	for i := 1; i <= n; i++ {
		switch {
		case i%97 == 0:
			b.WriteString("garbage\n")
		case i%89 == 0:
			b.WriteString("\r\n")
		default:
			b.WriteString(ev(fmt.Sprint(i)) + "\n")
		}
	}
	for _, chunk := range []int{600, 4096, 1 << 20} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			prev := 0
			st, err := jsonl.Read(context.Background(), strings.NewReader(b.String()), jsonl.Options{Workers: 4, ChunkSize: chunk, MaxLineSize: 500}, func(line int, e *model.Event, err error) error {
				if line <= prev {
					t.Fatalf("line %d after line %d", line, prev)
				}
				prev = line
				if err == nil && e.ID != fmt.Sprint(line) {
					t.Fatalf("line %d: event %s", line, e.ID)
				}
				if err != nil && line%97 != 0 {
					t.Fatalf("line %d: unexpected error %v", line, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if st.Lines != n || st.Events+st.RejectedTotal()+st.Blank != n {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestCallbackErrorStops(t *testing.T) {
	var b strings.Builder
	for i := range 10000 {
		b.WriteString(ev(fmt.Sprint(i)) + "\n")
	}
	stop := errors.New("stop")
	calls := 0
	st, err := jsonl.Read(context.Background(), strings.NewReader(b.String()), jsonl.Options{ChunkSize: 4096, MaxLineSize: 1000}, func(line int, e *model.Event, err error) error {
		calls++
		if line == 100 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 100 || st.Events != 100 {
		t.Errorf("err %v, calls %d, events %d; want stop after 100", err, calls, st.Events)
	}
}

// blockingReader returns some lines, then blocks until released.
type blockingReader struct {
	data    io.Reader
	release chan struct{}
}

func (r *blockingReader) Read(p []byte) (int, error) {
	n, err := r.data.Read(p)
	if err == io.EOF {
		<-r.release
	}
	return n, err
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &blockingReader{data: strings.NewReader(ev("a") + "\n" + ev("b") + "\n"), release: make(chan struct{})}
	defer close(r.release)
	done := make(chan error, 1)
	go func() {
		_, err := jsonl.Read(ctx, r, jsonl.Options{ChunkSize: 100, MaxLineSize: 98}, func(int, *model.Event, error) error { return nil })
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not return after cancel")
	}
}

func TestCancelledBefore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	_, err := jsonl.Read(ctx, strings.NewReader(ev("a")+"\n"), jsonl.Options{}, func(int, *model.Event, error) error { calls++; return nil })
	if !errors.Is(err, context.Canceled) || calls != 0 {
		t.Errorf("err %v, calls %d", err, calls)
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(ev("a")+"\n"+ev("b")), iotest.ErrReader(boom))
	out, _, err := collect(t, r, jsonl.Options{})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	// Lines read before the failure are delivered first.
	if len(out) != 2 {
		t.Errorf("got %v, want both lines before the error", out)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(ev("a")+"\n"+ev("b")), 0)
	f.Add([]byte("\r\n\n"+badDate+"\r\n"+ev("c")), 1)
	f.Add([]byte(strings.Repeat("x", 300)+"\n"+ev("d")), 2)
	f.Fuzz(func(t *testing.T, data []byte, seed int) {
		// Compare with a plain sequential split of the same input.
		type line struct {
			n  int
			ok bool
		}
		var want []line
		for i, l := range bytes.Split(data, []byte("\n")) {
			l = bytes.TrimSuffix(l, []byte("\r"))
			if len(bytes.Trim(l, " \t\r")) == 0 {
				continue
			}
			ok := false
			if len(l) <= 400 {
				_, err := model.Decode(l)
				ok = err == nil
			}
			want = append(want, line{i + 1, ok})
		}
		chunk := 402 + (seed&0xff)*7
		var got []line
		var r io.Reader = bytes.NewReader(data)
		if seed&0x100 != 0 {
			r = iotest.HalfReader(r)
		}
		st, err := jsonl.Read(context.Background(), r, jsonl.Options{Workers: 1 + seed&3, ChunkSize: chunk, MaxLineSize: 400}, func(n int, e *model.Event, err error) error {
			if (e == nil) == (err == nil) {
				t.Fatalf("line %d: event %v and error %v", n, e, err)
			}
			got = append(got, line{n, err == nil})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v\nwant %v", got, want)
		}
		if st.Bytes != int64(len(data)) {
			t.Fatalf("Bytes = %d, want %d", st.Bytes, len(data))
		}
	})
}

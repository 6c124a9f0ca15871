package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, line string
		want       Result
		err        string // a part of the error; "" for none
	}{
		{name: "full", line: "RESULT bench=ingest metric=throughput value=258911 unit=events/s ref=152664 ratio=1.70 rss_mib=203 load=1.23",
			want: Result{Bench: "ingest", Metric: "throughput", Value: "258911", Unit: "events/s", Ref: "152664", Ratio: "1.70", RSSMiB: "203", Load: "1.23"}},
		{name: "no reference, no rss", line: "RESULT bench=serve metric=day_p99_1000x365 value=48.2 unit=ms load=0.70",
			want: Result{Bench: "serve", Metric: "day_p99_1000x365", Value: "48.2", Unit: "ms", Load: "0.70"}},
		{name: "fields in another order, spaces around", line: "  RESULT load=3 unit=ms value=1 metric=m bench=b  ",
			want: Result{Bench: "b", Metric: "m", Value: "1", Unit: "ms", Load: "3"}},
		{name: "missing load", line: "RESULT bench=b metric=m value=1 unit=ms", err: "field load is missing"},
		{name: "missing value", line: "RESULT bench=b metric=m unit=ms load=1", err: "field value is missing"},
		{name: "value not a number", line: "RESULT bench=b metric=m value=fast unit=ms load=1", err: "field value=fast is not a number"},
		{name: "ratio not a number", line: "RESULT bench=b metric=m value=1 unit=ms ratio=1.2x load=1", err: "field ratio=1.2x is not a number"},
		{name: "unknown field", line: "RESULT bench=b metric=m value=1 unit=ms load=1 colour=red", err: "unknown field colour"},
		{name: "not key=value", line: "RESULT bench=b metric=m value=1 unit=ms load=1 p99", err: `field "p99" is not key=value`},
		{name: "empty value", line: "RESULT bench= metric=m value=1 unit=ms load=1", err: `field "bench=" is not key=value`},
		{name: "twice", line: "RESULT bench=b bench=c metric=m value=1 unit=ms load=1", err: "field bench given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.TrimSpace(tt.line))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) = %+v, %v; want an error with %q", tt.line, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.line, err)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
			if back, err := Parse(got.Line()); err != nil || back != got {
				t.Errorf("Parse(Line()) = %+v, %v; want %+v", back, err, got)
			}
		})
	}
}

func TestCollect(t *testing.T) {
	in := `size: 1000 pipelines x 365 days
kind       n      p50
RESULT bench=serve metric=day_p99_1000x365 value=48.2 unit=ms rss_mib=300 load=0.70
RESULT bench=serve metric=oops unit=ms load=1
RESULTS are below
RESULT bench=ingest metric=throughput value=258911 unit=events/s ref=152664 ratio=1.70 rss_mib=203 load=1.23
`
	got, errs := Collect(strings.NewReader(in))
	if len(got) != 2 || got[0].Metric != "day_p99_1000x365" || got[1].Bench != "ingest" {
		t.Errorf("Collect = %+v, want the serve and the ingest results in order", got)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "line 4:") || !strings.Contains(errs[0].Error(), "value is missing") {
		t.Errorf("Collect errors = %v, want one naming line 4 and the missing value", errs)
	}
}

func TestMarkdown(t *testing.T) {
	got := Markdown([]Result{
		{Bench: "ingest", Metric: "throughput", Value: "258911", Unit: "events/s", Ref: "152664", Ratio: "1.70", RSSMiB: "203", Load: "1.23"},
		{Bench: "replay", Metric: "Replay/typical", Value: "1017000.5", Unit: "events/s", Load: "2.6"},
		{Bench: "serve", Metric: "day_p99_1000x365", Value: "48.2", Unit: "ms", Load: "0.70"},
	}, "2026-12-01")
	want := `| benchmark | figure | measured | reference | ratio | peak RSS | load (1 min) | date | command |
|---|---|---|---|---|---|---|---|---|
| ingest | throughput | **258,911 events/s** | 152,664 events/s | 1.70x | 203 MiB | 1.23 | 2026-12-01 | ` + "`deploy/bench/ingest.sh`" + ` |
| replay | Replay/typical | **1,017,000.5 events/s** |  |  |  | 2.6 | 2026-12-01 | ` + "`go test -run '^$' -bench Replay -cpu 1 ./analyzer/replay/`" + ` |
| serve | day_p99_1000x365 | **48.2 ms** |  |  |  | 0.70 | 2026-12-01 | ` + "`deploy/bench/serve.sh`" + ` |
`
	if got != want {
		t.Errorf("Markdown =\n%s\nwant\n%s", got, want)
	}
}

func TestParseGoBench(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string // RESULT lines
		isBench    bool
		err        string
	}{
		{name: "replay", line: "BenchmarkReplay/typical     \t      10\t 123456789 ns/op\t   5600000 B/op\t   19148 allocs/op\t   1017000 events/s\t  12.50 events/batch",
			want: []string{"RESULT bench=replay metric=Replay/typical value=1017000 unit=events/s load=1.5"}, isBench: true},
		{name: "cpu suffix dropped", line: "BenchmarkOpenBatchMemory-2   1   99 ns/op   1233 B/open-batch   7.5 events/batch",
			want: []string{"RESULT bench=replay metric=OpenBatchMemory value=1233 unit=B/open-batch load=1.5"}, isBench: true},
		{name: "small values keep decimals", line: "BenchmarkX 1 5 ns/op 12.25 ms/page",
			want: []string{"RESULT bench=replay metric=X value=12.25 unit=ms/page load=1.5"}, isBench: true},
		{name: "only the standard metrics", line: "BenchmarkX-2 1000 5 ns/op", isBench: true},
		{name: "header", line: "goos: linux"},
		{name: "name alone (a log line)", line: "BenchmarkReplay"},
		{name: "pass", line: "PASS"},
		{name: "odd fields", line: "BenchmarkX 10 5 ns/op 7", isBench: true, err: "value unit pairs"},
		{name: "bad number", line: "BenchmarkX 10 5 ns/op fast events/s", isBench: true, err: "fast is not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ok, err := ParseGoBench(tt.line, "replay", "1.5")
			if ok != tt.isBench {
				t.Errorf("ok = %v, want %v", ok, tt.isBench)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res {
				got = append(got, r.Line())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Command table turns the figures the benchmarks print into the markdown
// table of docs/performance.md (`make bench` runs it last).
//
// Every benchmark script prints one line per figure:
//
//	RESULT bench=<name> metric=<metric> value=<number> unit=<unit> [ref=<number> ratio=<x.xx>] [rss_mib=<n>] load=<1-min load>
//
// and the Go micro benchmarks print go test's own lines, which -gobench
// turns into RESULT lines (each custom metric, such as events/s or
// B/open-batch, one line; ns/op, B/op, allocs/op and events/batch left
// out):
//
//	go test -run '^$' -bench Replay -cpu 1 ./analyzer/replay/ | go run ./deploy/bench/table -gobench replay
//	go run ./deploy/bench/table .data/bench/make-bench-*/results.txt
//
// Lines that are neither are skipped (the scripts' own output); a RESULT
// line that does not parse is named on stderr, left out of the table, and
// makes the exit status 1.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		gobench = flag.String("gobench", "", "read go test -bench output and print it as RESULT lines of this bench name")
		load    = flag.String("load", "", "with -gobench: the 1-min load to stamp (default: /proc/loadavg now)")
		date    = flag.String("date", time.Now().UTC().Format(time.DateOnly), "the date column")
	)
	flag.Parse()
	if *gobench != "" {
		l := *load
		if l == "" {
			l = loadAverage()
		}
		lines, err := goBench(os.Stdin, *gobench, l)
		for _, s := range lines {
			fmt.Println(s)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench table:", err)
			os.Exit(1)
		}
		return
	}
	var in []io.Reader
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench table:", err)
			os.Exit(1)
		}
		defer f.Close()
		in = append(in, f)
	}
	if len(in) == 0 {
		in = append(in, os.Stdin)
	}
	results, errs := Collect(io.MultiReader(in...))
	fmt.Print(Markdown(results, *date))
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, "bench table:", err)
	}
	if len(errs) > 0 {
		os.Exit(1)
	}
}

// Result is one figure of one benchmark.
type Result struct {
	Bench, Metric, Unit string
	// Value, Ref and Ratio are as printed (Ref and Ratio "" when the
	// benchmark has no reference leg), checked to be numbers.
	Value, Ref, Ratio string
	// RSSMiB is the peak RSS, "" when not given.
	RSSMiB string
	Load   string
}

// Collect reads the RESULT lines of r, in order; each line that starts
// with RESULT and does not parse is an error naming its line and field.
func Collect(r io.Reader) ([]Result, []error) {
	var (
		out  []Result
		errs []error
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "RESULT ") {
			continue
		}
		res, err := Parse(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("read the results: %w", err))
	}
	return out, errs
}

// Parse reads one RESULT line.
func Parse(line string) (Result, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "RESULT" {
		return Result{}, fmt.Errorf("%q: not a RESULT line", line)
	}
	kv := make(map[string]string, len(fields)-1)
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" {
			return Result{}, fmt.Errorf("%q: field %q is not key=value", line, f)
		}
		if _, dup := kv[k]; dup {
			return Result{}, fmt.Errorf("%q: field %s given twice", line, k)
		}
		switch k {
		case "bench", "metric", "value", "unit", "ref", "ratio", "rss_mib", "load":
		default:
			return Result{}, fmt.Errorf("%q: unknown field %s (want bench, metric, value, unit, ref, ratio, rss_mib, load)", line, k)
		}
		kv[k] = v
	}
	for _, k := range []string{"bench", "metric", "value", "unit", "load"} {
		if kv[k] == "" {
			return Result{}, fmt.Errorf("%q: field %s is missing", line, k)
		}
	}
	for _, k := range []string{"value", "ref", "ratio", "rss_mib", "load"} {
		if v, ok := kv[k]; ok {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return Result{}, fmt.Errorf("%q: field %s=%s is not a number", line, k, v)
			}
		}
	}
	return Result{Bench: kv["bench"], Metric: kv["metric"], Unit: kv["unit"], Value: kv["value"],
		Ref: kv["ref"], Ratio: kv["ratio"], RSSMiB: kv["rss_mib"], Load: kv["load"]}, nil
}

// Markdown is results as docs/performance.md's table: one row per
// figure, in order.
func Markdown(results []Result, date string) string {
	var b strings.Builder
	b.WriteString("| benchmark | figure | measured | reference | ratio | peak RSS | load (1 min) | date | command |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		ref, ratio, rss := "", "", ""
		if r.Ref != "" {
			ref = number(r.Ref) + " " + r.Unit
		}
		if r.Ratio != "" {
			ratio = r.Ratio + "x"
		}
		if r.RSSMiB != "" {
			rss = number(r.RSSMiB) + " MiB"
		}
		fmt.Fprintf(&b, "| %s | %s | **%s %s** | %s | %s | %s | %s | %s | `%s` |\n",
			r.Bench, r.Metric, number(r.Value), r.Unit, ref, ratio, rss, r.Load, date, command(r.Bench))
	}
	return b.String()
}

// commands are the commands `make bench` runs, by bench name; any other
// name is deploy/bench/<name>.sh.
var commands = map[string]string{
	"replay":    "go test -run '^$' -bench Replay -cpu 1 ./analyzer/replay/",
	"openbatch": "go test -run '^$' -bench OpenBatchMemory ./analyzer/detect/",
	// backfill.sh names each leg it runs.
	"backfill-dry":     "LEGS=dry deploy/bench/backfill.sh",
	"backfill-publish": "LEGS=publish deploy/bench/backfill.sh",
	"detect-memory":    "MODE=memory deploy/bench/detect.sh",
}

func command(bench string) string {
	if c, ok := commands[bench]; ok {
		return c
	}
	return "deploy/bench/" + bench + ".sh"
}

// number writes a number with thousands separators in its integer part,
// its decimals as given: 258911 -> 258,911, 1234.5 -> 1,234.5.
func number(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if len(intPart) > 3 && !strings.ContainsAny(intPart, "eE") {
		var b strings.Builder
		for i, c := range intPart {
			if i > 0 && (len(intPart)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		intPart = b.String()
	}
	if hasFrac {
		return sign + intPart + "." + frac
	}
	return sign + intPart
}

// goSkip are the go test metrics left out of the table.
var goSkip = map[string]bool{"ns/op": true, "B/op": true, "allocs/op": true, "events/batch": true}

// goBench turns the result lines of go test -bench output into RESULT
// lines of bench name, each custom metric one line, named by the
// benchmark (its name less "Benchmark" and the -CPUS suffix) and the unit.
func goBench(r io.Reader, name, load string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		res, _, err := ParseGoBench(sc.Text(), name, load)
		if err != nil {
			return out, err
		}
		for _, x := range res {
			out = append(out, x.Line())
		}
	}
	return out, sc.Err()
}

// ParseGoBench reads one line of go test -bench output: ok is false for
// any line but a benchmark's result ("BenchmarkX-2  100  123 ns/op ...").
func ParseGoBench(line, name, load string) ([]Result, bool, error) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return nil, false, nil
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return nil, false, nil // "BenchmarkX" alone, a log line
	}
	bname := strings.TrimPrefix(f[0], "Benchmark")
	if i := strings.LastIndexByte(bname, '-'); i > 0 {
		if _, err := strconv.Atoi(bname[i+1:]); err == nil {
			bname = bname[:i]
		}
	}
	if (len(f)-2)%2 != 0 {
		return nil, true, fmt.Errorf("%q: want value unit pairs after the iterations", line)
	}
	var out []Result
	for i := 2; i+1 < len(f); i += 2 {
		v, unit := f[i], f[i+1]
		if goSkip[unit] {
			continue
		}
		fv, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, true, fmt.Errorf("%q: %s is not a number (unit %s)", line, v, unit)
		}
		out = append(out, Result{Bench: name, Metric: bname, Value: trimFloat(fv), Unit: unit, Load: load})
	}
	return out, true, nil
}

// trimFloat writes v without exponent, whole numbers above 100 as
// integers.
func trimFloat(v float64) string {
	if v >= 100 || v <= -100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Line is r as a RESULT line.
func (r Result) Line() string {
	s := "RESULT bench=" + r.Bench + " metric=" + r.Metric + " value=" + r.Value + " unit=" + r.Unit
	if r.Ref != "" {
		s += " ref=" + r.Ref
	}
	if r.Ratio != "" {
		s += " ratio=" + r.Ratio
	}
	if r.RSSMiB != "" {
		s += " rss_mib=" + r.RSSMiB
	}
	return s + " load=" + r.Load
}

// loadAverage is the 1-minute load average (/proc/loadavg), "0" when it
// cannot be read.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "0"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "0"
}

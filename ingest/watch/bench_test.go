package watch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/watch"
	"github.com/handoff-dev/handoff/model"
)

// BenchmarkWatch measures how many files per second a watcher reports:
// 2,000 data files (about 4 KiB each, 60 rows) land at once in an
// exchange directory, renamed into it from a staging directory on the
// same file system (as a transfer delivers them: writing them is not what
// is measured), and the clock runs until every one is reported (read,
// counted, hashed; settle window 50 ms, counted in). The target is 1,000
// files/s.
//
//	go test -run '^$' -bench Watch -count 3 ./ingest/watch/
func BenchmarkWatch(b *testing.B) {
	const n = 2000
	var body []byte
	body = append(body, "account_id,snapshot_date,balance\n"...)
	for i := range 60 {
		body = fmt.Appendf(body, "%020d,2026-09-30,%032d\n", i, i*7919)
	}
	day0 := model.MustParseDate("2000-01-01")
	var total time.Duration
	for range b.N {
		b.StopTimer()
		root := b.TempDir()
		dir, staging := filepath.Join(root, "inbox"), filepath.Join(root, "staging")
		os.Mkdir(dir, 0o755)
		os.Mkdir(staging, 0o755)
		names := make([]string, n)
		for i := range n {
			names[i] = "account_balance_snapshot_" + day0.AddDays(i).Compact() + ".csv"
			if err := os.WriteFile(filepath.Join(staging, names[i]), body, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		s := newSink()
		_, stop := start(b, watch.Config{Role: watch.Exchange, Dir: dir, Contracts: contracts(b), Settle: 50 * time.Millisecond, Rescan: time.Minute}, s)
		b.StartTimer()
		began := time.Now()
		for _, name := range names {
			if err := os.Rename(filepath.Join(staging, name), filepath.Join(dir, name)); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, time.Minute, "every file reported", func() bool { return len(s.snapshot()) >= n })
		total += time.Since(began)
		b.StopTimer()
		stop()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "files/s")
}

package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// counted returns the value of the stage's series of errs.
func counted(t *testing.T, errs *prometheus.CounterVec, stage string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(errs)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == stage {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestDo runs on synctest's fake clock, so the backoff schedule is
// checked exactly without waiting for it.
func TestDo(t *testing.T) {
	boom := errors.New("connection refused")
	tests := []struct {
		name      string
		stage     string
		failures  int // attempts that fail before one succeeds
		attempts  int // limit (0: none)
		cancelAt  time.Duration
		wantErr   string
		wantCalls int
		wantWait  time.Duration // fake time spent
		wantCount float64
	}{
		{"first try", "insert", 0, 0, 0, "", 1, 0, 0},
		{"backoff doubles to the cap", "insert", 6, 0, 0, "", 7, 100*time.Millisecond + 200*time.Millisecond + 400*time.Millisecond + 800*time.Millisecond + time.Second + time.Second, 6},
		{"attempt limit", "commit", 100, 3, 0, "commit offsets: failed 3 times: connection refused", 3, 300 * time.Millisecond, 3},
		{"context ends while waiting", "insert", 100, 0, 250 * time.Millisecond, "insert rows: stopped before it succeeded: connection refused", 2, 250 * time.Millisecond, 2},
		{"startup is not counted", Startup, 2, 0, 0, "", 3, 300 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "errors_total"}, []string{"stage"})
				r := Retrier{Errors: errs, Max: time.Second}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancelAt > 0 {
					time.AfterFunc(tt.cancelAt, cancel)
				}
				calls := 0
				start := time.Now()
				what := map[string]string{"commit": "commit offsets"}[tt.stage]
				if what == "" {
					what = "insert rows"
				}
				err := r.Do(ctx, tt.stage, what, tt.attempts, func(ctx context.Context) error {
					calls++
					if calls <= tt.failures {
						return boom
					}
					return nil
				})
				if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if tt.wantErr != "" && !errors.Is(err, boom) {
					t.Errorf("error %v does not wrap the attempt's error", err)
				}
				if calls != tt.wantCalls {
					t.Errorf("%d calls, want %d", calls, tt.wantCalls)
				}
				if waited := time.Since(start); waited != tt.wantWait {
					t.Errorf("waited %v, want %v", waited, tt.wantWait)
				}
				if got := counted(t, errs, tt.stage); got != tt.wantCount {
					t.Errorf("errors{stage=%s} = %v, want %v", tt.stage, got, tt.wantCount)
				}
			})
		})
	}
}

// TestDoAttemptTimeout: each attempt gets at most a minute, so a hung
// call does not hold a consumer forever.
func TestDoAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		start := time.Now()
		err := Retrier{}.Do(context.Background(), "insert", "insert rows", 2, func(ctx context.Context) error {
			calls++
			<-ctx.Done()
			return ctx.Err()
		})
		if !errors.Is(err, context.DeadlineExceeded) || calls != 2 {
			t.Fatalf("err = %v after %d calls, want the attempts' deadline after 2", err, calls)
		}
		if waited := time.Since(start); waited != 2*time.Minute+100*time.Millisecond {
			t.Errorf("waited %v, want two one-minute attempts and one backoff", waited)
		}
	})
}

// TestDoAttemptBound: Attempt replaces the one-minute bound, so work that
// takes longer than a minute can finish in one attempt.
func TestDoAttemptBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := Retrier{Attempt: time.Hour}.Do(context.Background(), "restore", "read history", 2, func(ctx context.Context) error {
			calls++
			select {
			case <-time.After(10 * time.Minute): // a long read that completes
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil || calls != 1 {
			t.Fatalf("err = %v after %d calls, want success in 1", err, calls)
		}
	})
}

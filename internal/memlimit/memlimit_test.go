package memlimit

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	l := New(768<<20, 0.5)
	for _, tc := range []struct {
		live uint64
		want int64
	}{
		{0, 768 << 20},
		{400 << 20, 768 << 20}, // small: the floor bounds the peak
		{512 << 20, 768 << 20}, // exactly at the floor
		{600 << 20, 900 << 20}, // past it: half of what is live to grow
		{2 << 30, 3 << 30},     // a detector holding 2 GiB
	} {
		if got := l.Limit(tc.live); got != tc.want {
			t.Errorf("Limit(%d MiB) = %d MiB, want %d MiB", tc.live>>20, got>>20, tc.want>>20)
		}
	}
}

// TestAdjustFollowsTheLiveHeap holds more than the floor, collects, and
// checks that the process's soft limit rose above what is held; then
// releases it and checks that the limit went back to the floor.
func TestAdjustFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const floor = 16 << 20
	l := New(floor, 0.5)
	held := make([][]byte, 64)
	for i := range held {
		held[i] = make([]byte, 1<<20)
		held[i][0] = 1
	}
	runtime.GC()
	got := l.Adjust()
	if got < 96<<20 {
		t.Fatalf("holding 64 MiB, the limit is %d MiB, want at least 96 MiB (64 MiB and half of it)", got>>20)
	}
	if now := debug.SetMemoryLimit(-1); now != got {
		t.Fatalf("Adjust returned %d, the process's limit is %d", got, now)
	}
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	if got := l.Adjust(); got != floor {
		t.Fatalf("after releasing, the limit is %d MiB, want the floor %d MiB", got>>20, floor>>20)
	}
}

func TestRunStopsWithItsContext(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(1 << 40)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		New(32<<20, 0.5).Run(ctx, time.Hour)
		close(done)
	}()
	cancel()
	<-done
	// The first adjustment happens before Run waits: the limit is set.
	if got := debug.SetMemoryLimit(-1); got == 1<<40 {
		t.Fatal("Run returned without setting the limit")
	}
}

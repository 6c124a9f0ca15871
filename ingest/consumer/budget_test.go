package consumer

import (
	"context"
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if !b.acquire(ctx, 60) || !b.acquire(ctx, 40) {
		t.Fatal("acquire within the limit failed")
	}
	// Full: a further acquire waits until ctx ends and takes nothing.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if b.acquire(short, 1) {
		t.Fatal("acquire beyond the limit succeeded")
	}
	if b.held() != 100 {
		t.Fatalf("held %d after a failed acquire, want 100", b.held())
	}
	// A waiter gets through once enough is released, and not before.
	got := make(chan bool, 1)
	go func() { got <- b.acquire(ctx, 50) }()
	b.release(40) // 60 held: 50 more does not fit
	if b.acquire(short, 50) {
		t.Fatal("acquire of 50 passed with 60 of 100 held")
	}
	b.release(60)
	select {
	case ok := <-got:
		if !ok || b.held() != 50 {
			t.Fatalf("acquire after release: %v, held %d, want true, 50", ok, b.held())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acquire did not wake after release")
	}
	b.release(50)
	// More than the whole budget passes when nothing is held, and then
	// nothing else does.
	if !b.acquire(ctx, 500) {
		t.Fatal("an oversized acquire with nothing held failed")
	}
	if b.acquire(short, 1) {
		t.Fatal("acquire while an oversized message is held succeeded")
	}
	b.force(7)
	if b.held() != 507 {
		t.Fatalf("held %d after force, want 507", b.held())
	}
}

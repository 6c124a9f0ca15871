package main

import "testing"

func TestIngestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		batchBytes, want int64
	}{
		{64 * mib, 320 * mib}, // the default HANDOFF_BATCH_BYTES
		{1 * mib, 256 * mib},  // small batches: the floor
		{48 * mib, 256 * mib},
		{256 * mib, 1088 * mib}, // large events: room for 4 batches
	} {
		if got := ingestMemoryLimit(tc.batchBytes); got != tc.want {
			t.Errorf("ingestMemoryLimit(%d MiB) = %d MiB, want %d MiB", tc.batchBytes/mib, got/mib, tc.want/mib)
		}
	}
}

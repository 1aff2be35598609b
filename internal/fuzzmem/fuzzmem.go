package fuzzmem

import (
	"runtime"
	"testing"
)

// Allocated is the bytes allocated while f ran.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Check runs f and fails t if it allocated more than per bytes for each
// byte of input plus base.
func Check(t testing.TB, input []byte, per, base uint64, f func()) {
	t.Helper()
	limit := per*uint64(len(input)) + base
	if n := Allocated(f); n > limit {
		t.Fatalf("%d bytes allocated for an input of %d bytes (limit %d×+%d = %d)", n, len(input), per, base, limit)
	}
}

package wasm

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSlotSwapUnderLoad: calls keep flowing through a handle while its
// plugin's module is replaced 100 times, alternating two versions. No call
// fails, every result is exactly one version's, and afterwards nothing is
// left alive but the last module.
func TestSlotSwapUnderLoad(t *testing.T) {
	base := runtime.NumGoroutine()
	ctx := context.Background()
	e := newEnv(t)
	versions := [2][]byte{}
	for i, v := range []string{"v1", "v2"} {
		b, err := os.ReadFile(filepath.Join("testdata", "reload", v+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		versions[i] = b
	}
	load := func(i int) *Module {
		m, err := e.rt.Load(ctx, versions[i], Options{Name: "versioned", Limits: Limits{Instances: 4}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	slot := NewSlot(load(0))
	h, err := slot.Configure(ctx, "version", nil)
	if err != nil {
		t.Fatal(err)
	}
	var calls, failed atomic.Int64
	var mu sync.Mutex
	seen := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := call(t, `{"x":1}`)
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, err := h.Act(ctx, c)
				calls.Add(1)
				if err != nil {
					failed.Add(1)
					t.Errorf("call failed during swaps: %v", err)
					return
				}
				mu.Lock()
				seen[string(out)]++
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	for i := 1; i <= 100; i++ {
		old := slot.Swap(load(i % 2))
		old.Close(ctx)
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	rate := float64(calls.Load()) / time.Since(start).Seconds()
	t.Logf("%d calls at %.0f/s across 100 swaps: %v", calls.Load(), rate, seen)
	if failed.Load() != 0 {
		t.Fatalf("%d calls failed", failed.Load())
	}
	if rate < 1000 {
		t.Errorf("%.0f calls/s; the test wants at least 1,000", rate)
	}
	if len(seen) != 2 || seen["v1"] == 0 || seen["v2"] == 0 {
		t.Errorf("results %v; want only v1 and v2, both", seen)
	}
	cur := slot.Module()
	if n, live := e.rt.LiveInstances(), cur.Live(); n != live {
		t.Errorf("%d instances alive, the current module holds %d: old modules did not drain", n, live)
	}
	cur.Close(ctx)
	if n := e.rt.LiveInstances(); n != 0 {
		t.Errorf("%d instances alive after the last module closed", n)
	}
	e.rt.Close(ctx)
	if n := settle(t, base); n > base {
		t.Errorf("goroutines: %d after, %d before", n, base)
	}
}

package instrument

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// stopResult is how an asynchronous stop went.
type stopResult struct {
	after   time.Duration // from the first store to the call's return
	stores  int
	rescued bool // set did not stop the call in 5s; the stop global did
	byFuel  bool // the fuel ran out with the stop global unset (meaningless when set zeroes the fuel)
}

// asyncFuel is the budget a call under an asynchronous stop gets: finite,
// so that a stall keeping the stopping goroutine from running (a garbage
// collection waits for compiled guest code, which cannot be preempted) ends
// when the fuel does — a few seconds — rather than hanging the test binary.
// The host always sets a finite budget for the same reason.
const asyncFuel = 3e9

// stopAsync calls fn on m with asyncFuel and, from this goroutine after
// 20ms, calls set every millisecond until the call returns. After 5s it falls
// back to the stop global.
//
// Compiled guest code cannot be preempted, so a garbage collection started
// while the guest spins waits for it to return, and stops every other
// goroutine meanwhile, including this one: GC is off for the duration. For
// the same reason another P is needed to run this goroutine at all.
func stopAsync(t *testing.T, m api.Module, fn string, set func()) stopResult {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2: a spinning guest holds its P")
	}
	runtime.GC() // finish any cycle in flight before the guest holds a P
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var res stopResult
	var returned time.Time
	fuel(t, m).Set(asyncFuel)
	done := make(chan error, 1)
	go func() {
		_, err := m.ExportedFunction(fn).Call(context.Background())
		returned = time.Now()
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(5 * time.Second)
	for {
		set()
		res.stores++
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("got no error from the stopped call; want a trap")
			}
			res.after = returned.Sub(start)
			res.byFuel = int64(fuel(t, m).Get()) <= 0 && int64(stop(t, m).Get()) == 0
			return res
		case <-giveUp:
			res.rescued = true
			stop(t, m).Set(math.MaxInt64)
			<-done // asyncFuel bounds the wait
			res.after = returned.Sub(start)
			return res
		case <-tick.C:
		}
	}
}

// TestAsyncStop is how the host enforces a wall-clock deadline: a call runs
// with unbounded fuel and another goroutine stops it. Zeroing the fuel races
// with the guest's own writes of it (a guest that loaded the fuel just before
// the store writes its stale value back), so that store is repeated every
// millisecond and may still take seconds; the stop global, which the guest
// never writes, needs one store.
func TestAsyncStop(t *testing.T) {
	for _, e := range engines {
		for _, how := range []string{"zero fuel", "stop"} {
			t.Run(e.name+"/"+how, func(t *testing.T) {
				if e.name == interpreter.name && raceEnabled {
					t.Skip("the interpreter reads the global in Go: a data race by design")
				}
				m := instantiate(t, e.runtime(t), mustInstrument(t, readTestdata(t, "spin.wasm"), Options{}).Bytes)
				set := func() { fuel(t, m).Set(0) }
				if how == "stop" {
					set = func() { stop(t, m).Set(math.MaxInt64) }
				}
				res := stopAsync(t, m, "spin", set)
				t.Logf("%s, %s: returned %v after the first store (%d stores)", e.name, how, res.after, res.stores)
				switch {
				case res.byFuel && how == "stop":
					t.Logf("the fuel ran out before any store landed: something held this goroutine (a GC?)")
				case res.rescued && how == "stop":
					t.Errorf("the stop global did not stop the call within 5s")
				case res.rescued:
					t.Logf("zeroing the fuel had not stopped the call after 5s; the stop global then did")
				}
			})
		}
	}
}

// TestAsyncStopGoModule stops a Go-compiled guest spinning in a loop.
func TestAsyncStopGoModule(t *testing.T) {
	m := instantiateGo(t, compiler, mustInstrument(t, goReactor(t), Options{}).Bytes)
	res := stopAsync(t, m, "spin", func() { stop(t, m).Set(math.MaxInt64) })
	t.Logf("returned %v after the first store (%d stores)", res.after, res.stores)
	if res.byFuel {
		t.Logf("the fuel ran out before the store landed: something held this goroutine (a GC?)")
	} else if res.rescued {
		t.Errorf("the stop global did not stop the call within 5s")
	}
}

// TestGCWaitsForGuest documents a hazard for the host rather than a property
// of this package: compiled guest code cannot be preempted, so a garbage
// collection started while a guest spins waits until the guest returns, and
// every other goroutine (a deadline timer included) is stopped meanwhile.
// Only the fuel budget then bounds the stall, so the host must always set a
// finite one. The guest here has about a second of fuel.
func TestGCWaitsForGuest(t *testing.T) {
	if testing.Short() || runtime.GOMAXPROCS(0) < 2 {
		t.Skip("slow, and needs GOMAXPROCS >= 2")
	}
	m := instantiate(t, compiler.runtime(t), mustInstrument(t, readTestdata(t, "spin.wasm"), Options{}).Bytes)
	fuel(t, m).Set(1e9)
	done := make(chan error, 1)
	go func() {
		_, err := call(m, "spin", nil)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	runtime.GC()
	t.Logf("runtime.GC took %v while a guest spun", time.Since(start))
	if err := <-done; err == nil {
		t.Errorf("got no error; want the fuel to run out")
	}
}

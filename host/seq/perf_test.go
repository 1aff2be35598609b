package seq

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

type nopAction struct{}

func (nopAction) Act(context.Context, *Call) ([]byte, error) { return nil, nil }

// TestParkedRunsMemory: 100,000 runs parked on an after delay cost at most
// 1 KiB each beyond the event they carry (here one event shared by all),
// and no goroutine each.
func TestParkedRunsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 runs")
	}
	const n = 100_000
	clk := sched.NewVirtual(t0)
	p := pool.New(pool.Config{Workers: 2, Capacity: n})
	defer p.Stop()
	rn := NewRunner(RunnerConfig{Pool: p, Scheduler: clk, Log: &testkit.Log{}})
	r := &rules.Rule{ID: "r", Mode: rules.ModeParallel, Max: n, Repeat: rules.Repeat{Passes: 1}}
	s := &Sequence{Rule: r, Steps: []CompiledStep{{Name: "wait", Action: nopAction{}, After: time.Hour}}}
	var dec bus.Decoder
	e, _ := dec.Decode([]byte(`{"topic":"t","vehicle":"s-1","battery":12}`))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	for i := 0; i < n; i++ {
		rn.Fire(Trigger{Seq: s, Event: e})
	}
	deadline := time.Now().Add(60 * time.Second)
	// A run is active once admitted; its timer is armed a moment later.
	for (rn.Active() < n || clk.Len() < n) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if rn.Active() != n || clk.Len() != n {
		t.Fatalf("active %d, parked %d; want %d", rn.Active(), clk.Len(), n)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d parked runs: %.0f bytes each (heap %d -> %d), goroutines %d -> %d",
		n, per, before.HeapAlloc, after.HeapAlloc, goroutines, runtime.NumGoroutine())
	if per > 1024 {
		t.Errorf("%.0f bytes per parked run; want at most 1 KiB", per)
	}
	if g := runtime.NumGoroutine(); g > goroutines+2 {
		t.Errorf("goroutines grew from %d to %d", goroutines, g)
	}
	clk.Advance(time.Hour)
	// A deadline of its own: under -race on a loaded machine the first
	// phase has taken most of a minute, and this one as long again.
	deadline = time.Now().Add(2 * time.Minute)
	for rn.Active() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if rn.Active() != 0 {
		t.Errorf("%d runs still active after their delay", rn.Active())
	}
}

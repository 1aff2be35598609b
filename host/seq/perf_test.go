package seq

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

type nopAction struct{}

func (nopAction) Act(context.Context, *Call) ([]byte, error) { return nil, nil }

type failAction struct{}

func (failAction) Act(context.Context, *Call) ([]byte, error) { return nil, errors.New("no") }

// countingHasher counts writes and keeps nothing, so that a test of the
// runner's memory does not count the store's.
type countingHasher struct{ sets, dels atomic.Int64 }

func (h *countingHasher) HSet(string, string, any) error { h.sets.Add(1); return nil }
func (h *countingHasher) HGetAll(string) (map[string]string, error) {
	return nil, nil
}
func (h *countingHasher) HDel(_ string, f ...string) error { h.dels.Add(int64(len(f))); return nil }

// TestParkedRunsMemory: 100,000 runs parked on an after delay, or waiting
// an hour for a step's retry, cost at most 1 KiB each beyond the event
// they carry (here one event shared by all), no goroutine each, and —
// for the retry, whose wait is durable — one store write each, none
// while they wait.
func TestParkedRunsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 runs")
	}
	for _, kind := range []string{"after", "retry", "outputs", "wait"} {
		t.Run(kind, func(t *testing.T) { parkedRuns(t, kind) })
	}
}

// answerAction returns a step's output.
type answerAction struct{}

func (answerAction) Act(context.Context, *Call) ([]byte, error) {
	return []byte(`{"slot":"b7","bay":3,"free":true}`), nil
}

// parkedRuns parks n runs: on an after ("after"), for a retry ("retry"),
// on an after with a step's output and a variable kept ("outputs"), or
// waiting for an event (wait-for, durable: "wait").
func parkedRuns(t *testing.T, kind string) {
	retry := kind == "retry"
	const n = 100_000
	clk := sched.NewVirtual(t0)
	p := pool.New(pool.Config{Workers: 2, Capacity: n})
	defer p.Stop()
	h := &countingHasher{}
	cfg := RunnerConfig{Pool: p, Scheduler: clk, Log: &testkit.Log{}}
	r := &rules.Rule{ID: "r", Mode: rules.ModeParallel, Max: n, Repeat: rules.Repeat{Passes: 1}}
	s := &Sequence{Rule: r, Steps: []CompiledStep{{Name: "wait", Action: nopAction{}, After: time.Hour}}}
	if retry {
		cfg.Store = NewPendingStore(h, Placement{}, &testkit.Log{})
		s.Steps[0] = CompiledStep{Name: "call", Action: failAction{},
			Retry: rules.Retry{Attempts: 2, Backoff: time.Hour, MaxBackoff: time.Hour, Factor: 2}}
	}
	if kind == "wait" {
		cfg.Store = NewPendingStore(h, Placement{}, &testkit.Log{})
		s.Steps[0] = CompiledStep{Name: "flow", Wait: &Wait{Pattern: "flow.sensor", Match: []string{"vehicle"}, Timeout: time.Hour, Continue: true}}
	}
	if kind == "outputs" {
		s.Steps = []CompiledStep{{Name: "ask", Action: answerAction{}}, {Name: "book", Action: nopAction{}, After: time.Hour}}
		v, err := tmpl.JSON(map[string]any{"zone": "{{vehicle}}"})
		if err != nil {
			t.Fatal(err)
		}
		s.Vars = v
	}
	rn := NewRunner(cfg)
	var dec bus.Decoder
	e, _ := dec.Decode([]byte(`{"topic":"t","vehicle":"s-1","battery":12}`))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	for i := 0; i < n; i++ {
		rn.Fire(Trigger{Seq: s, Event: e})
	}
	// A run is active once admitted; its timer is armed a moment later.
	settled, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rn.Quiet(settled, 0) // past its deadline: the check says what is missing
	if rn.Counts().Active != n || clk.Len() != n {
		t.Fatalf("active %d, parked %d; want %d", rn.Counts().Active, clk.Len(), n)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%s: %d parked runs: %.0f bytes each (heap %d -> %d), goroutines %d -> %d, store writes %d",
		kind, n, per, before.HeapAlloc, after.HeapAlloc, goroutines, runtime.NumGoroutine(), h.sets.Load())
	if kind == "wait" && rn.Counts().Waiting != n {
		t.Errorf("%d runs listed waiting; want %d", rn.Counts().Waiting, n)
	}
	if (retry || kind == "wait") && h.sets.Load() != n {
		t.Errorf("%d store writes for %d runs waiting for a retry; want one each", h.sets.Load(), n)
	}
	if per > 1024 {
		t.Errorf("%.0f bytes per parked run; want at most 1 KiB", per)
	}
	if g := runtime.NumGoroutine(); g > goroutines+2 {
		t.Errorf("goroutines grew from %d to %d", goroutines, g)
	}
	clk.Advance(time.Hour)
	// A deadline of its own: under -race on a loaded machine the first
	// phase has taken most of a minute, and this one as long again.
	settled, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A completed run's record goes aside, or on its worker: the
	// removals are in flight until they are done.
	rn.Quiet(settled, 0)
	if rn.Counts().Active != 0 {
		t.Errorf("%d runs still active after their delay", rn.Counts().Active)
	}
	if (retry || kind == "wait") && (h.sets.Load() != n || h.dels.Load() != n) {
		t.Errorf("writes %d, deletes %d; want %d each: the record written once, removed once", h.sets.Load(), h.dels.Load(), n)
	}
}

package seq

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// startAction records when each run's first step starts.
type startAction struct {
	mu      sync.Mutex
	started []time.Duration
	sent    map[string]time.Time
}

func (a *startAction) Act(_ context.Context, c *Call) ([]byte, error) {
	now := time.Now()
	e := &bus.Event{View: c.View}
	id, _ := fieldOf(e, "id")
	a.mu.Lock()
	a.started = append(a.started, now.Sub(a.sent[id]))
	a.mu.Unlock()
	return nil, nil
}

// TestStartLatency measures event → first step started at 1,000 events/s,
// through Fire, the pool, the rule's condition (the expr plugin, in wasm) and
// the mode decision, next to a bare channel handoff measured in the same run.
// It reports figures rather than asserting wall-clock times; `make bench`
// runs it (RULED_PERF=1).
func TestStartLatency(t *testing.T) {
	if os.Getenv("RULED_PERF") == "" {
		t.Skip("RULED_PERF=1 to measure")
	}
	ctx := context.Background()
	rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: plugintest.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m, err := rt.LoadFile(ctx, plugintest.FirstParty(t, "expr"), wasm.Options{Name: "expr"})
	if err != nil {
		t.Fatal(err)
	}
	cond, err := m.Configure(ctx, "expr", []byte(`{"expr":"battery < 20"}`))
	if err != nil {
		t.Fatal(err)
	}
	const n, rate = 2000, time.Millisecond
	a := &startAction{sent: map[string]time.Time{}}
	p := pool.New(pool.Config{Workers: 1})
	defer p.Stop()
	s := sched.New()
	defer s.Stop()
	rn := NewRunner(RunnerConfig{Pool: p, Scheduler: s, Log: &testkit.Log{}})
	seq := &Sequence{Rule: &rules.Rule{ID: "r", Mode: rules.ModeParallel, Max: n, Repeat: rules.Repeat{Passes: 1}},
		When: wasmCondition{cond}, Steps: []CompiledStep{{Name: "a", Action: a}}}
	var dec bus.Decoder
	evs := make([]*bus.Event, n)
	for i := range evs {
		evs[i], _ = dec.Decode([]byte(`{"topic":"t","battery":12,"id":"e` + strconv.Itoa(i) + `"}`))
	}
	tick := time.NewTicker(rate)
	for i := 0; i < n; i++ {
		<-tick.C
		a.mu.Lock()
		a.sent[evs[i].ID] = time.Now()
		a.mu.Unlock()
		rn.Fire(Trigger{Seq: seq, Event: evs[i]})
	}
	tick.Stop()
	settled, cancel := context.WithTimeout(ctx, 10*time.Second)
	rn.Quiet(settled, 0) // past its deadline: the figures say how many started
	cancel()

	// The baseline: a bare channel handoff between two goroutines, same rate.
	ch := make(chan time.Time, 16)
	var hand []time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sent := range ch {
			hand = append(hand, time.Since(sent))
		}
	}()
	tick = time.NewTicker(rate)
	for i := 0; i < n; i++ {
		<-tick.C
		ch <- time.Now()
	}
	tick.Stop()
	close(ch)
	wg.Wait()

	p50, p99 := pct(a.started, 50), pct(a.started, 99)
	b50, b99 := pct(hand, 50), pct(hand, 99)
	t.Logf("event → first step started, %d events at 1,000/s: p50 %v p99 %v", len(a.started), p50, p99)
	t.Logf("bare channel handoff, same rate:                     p50 %v p99 %v", b50, b99)
	t.Logf("ratio: p50 %.1fx, p99 %.1fx", float64(p50)/float64(b50), float64(p99)/float64(b99))
	if len(a.started) != n {
		t.Errorf("%d of %d runs started", len(a.started), n)
	}
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// wasmCondition is a plugin's handle as a Condition, as the daemon wires it.
type wasmCondition struct{ h *wasm.Handle }

func (w wasmCondition) When(ctx context.Context, c *Call) (bool, error) {
	return w.h.When(ctx, (*wasm.Call)(c))
}

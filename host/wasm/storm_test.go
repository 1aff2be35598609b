package wasm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// slowServices is services whose kv_set, publish and fire each take a
// millisecond, as a store's transaction does (a bbolt commit with its
// fsync takes longer).
type slowServices struct{ *services }

func (s slowServices) Set(ctx context.Context, scope, key string, value []byte) error {
	time.Sleep(time.Millisecond)
	return s.services.Set(ctx, scope, key, value)
}

func (s slowServices) Publish(ctx context.Context, from Origin, topic string, payload []byte) error {
	time.Sleep(time.Millisecond)
	return nil
}

func (s slowServices) Fire(ctx context.Context, from Origin, rule string, payload []byte) (string, error) {
	time.Sleep(time.Millisecond)
	return "x", nil
}

// TestHostCallStormStopsAtDeadline: a guest looping on a host call and
// never looking at its answer stops within twice its deadline, with
// GOMAXPROCS 1 and 2 (issue 37, 2: host calls cost no fuel and the stop
// flag was read only every instrument.CheckpointUnits of it, so a kv_set
// loop held a worker for over 60 s past a 1 s deadline). A host call is
// charged the fuel of the time it took, and one made past the deadline is
// refused and stops the guest at its next check.
func TestHostCallStormStopsAtDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs each storm to its deadline")
	}
	const deadline = 300 * time.Millisecond
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			e := newEnv(t)
			slow := slowServices{e.svc}
			rt, err := NewRuntime(context.Background(), Config{CacheDir: plugintest.CacheDir(), Interpreter: interpreter,
				Services: Services{Publisher: slow, KV: slow, Firer: slow}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			m, err := rt.LoadFile(context.Background(), filepath.Join("testdata", "hostile", "storm.wasm"),
				Options{Name: "storm", Grant: []abi.Capability{abi.CapKV, abi.CapPublish, abi.CapFire},
					Limits: Limits{Timeout: deadline}})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			for _, fn := range []string{"kv", "publish", "fire", "log", "now"} {
				h := configure(t, m, fn, "")
				start := time.Now()
				_, err := h.Act(context.Background(), call(t, sampleEvent))
				took := time.Since(start)
				h.Close()
				var ce *CallError
				if !errors.As(err, &ce) || ce.Cause != CauseDeadline && ce.Cause != CauseFuel {
					t.Fatalf("%s: %v; want the deadline or the fuel", fn, err)
				}
				if took > 2*deadline {
					t.Errorf("%s: stopped after %v; want within 2× the deadline of %v", fn, took, deadline)
				}
				t.Logf("%s: %v after %v", fn, ce.Cause, took.Round(time.Millisecond))
			}
		})
	}
}

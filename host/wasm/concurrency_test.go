package wasm

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// meetKV is a kv store whose Set waits until two calls are inside it at
// once (or gives up after a while), so the test can prove that two
// instances of one module ran at the same time rather than hope for it.
type meetKV struct {
	mu     sync.Mutex
	inside int
	met    atomic.Bool
	kv     sync.Map
}

func (k *meetKV) Set(_ context.Context, scope, key string, v []byte) error {
	k.mu.Lock()
	k.inside++
	if k.inside >= 2 {
		k.met.Store(true)
	}
	k.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for !k.met.Load() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	k.mu.Lock()
	k.inside--
	k.mu.Unlock()
	k.kv.Store(scope+"/"+key, string(v))
	return nil
}

func (k *meetKV) Get(_ context.Context, scope, key string) ([]byte, bool, error) {
	v, ok := k.kv.Load(scope + "/" + key)
	if !ok {
		return nil, false, nil
	}
	return []byte(v.(string)), true, nil
}

func (k *meetKV) Delete(_ context.Context, scope, key string) error {
	k.kv.Delete(scope + "/" + key)
	return nil
}

// TestConcurrentCalls: 8 goroutines call one module at once; every result
// is the caller's own, and at least two instances served calls at the same
// time.
func TestConcurrentCalls(t *testing.T) {
	for _, sdk := range sdks {
		t.Run(sdk.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			ctx := context.Background()
			kv := &meetKV{}
			rt, err := NewRuntime(ctx, Config{CacheDir: plugintest.CacheDir(), Interpreter: interpreter,
				Services: Services{KV: kv}})
			if err != nil {
				t.Fatal(err)
			}
			m, err := rt.LoadFile(ctx, sdk.path(t), Options{Grant: abi.Capabilities, Limits: Limits{Instances: 4}})
			if err != nil {
				t.Fatal(err)
			}
			echo := configure(t, m, "echo", `{"prefix":"p:"}`)
			kvrt := configure(t, m, "kv_roundtrip", "")
			const workers, calls = 8, 40
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < calls; i++ {
						run := fmt.Sprintf("w%d-c%d", w, i)
						c, err := NewCall(abi.CallInfo{Run: run, Pass: uint32(i), Topic: "t"},
							[]byte(fmt.Sprintf(`{"key":"k%d","value":"%s"}`, w, run)))
						if err != nil {
							errs <- err
							return
						}
						out, err := echo.Act(ctx, c)
						if err != nil || !strings.Contains(string(out), " run="+run+" ") || !strings.HasSuffix(strings.Fields(string(out))[5], fmt.Sprint(i)) {
							errs <- fmt.Errorf("echo for %s = %q, %v", run, out, err)
							return
						}
						if i < 2 {
							out, err = kvrt.Act(ctx, c)
							if err != nil || string(out) != run {
								errs <- fmt.Errorf("kv_roundtrip for %s = %q, %v", run, out, err)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if !kv.met.Load() || m.PeakBusy() < 2 {
				t.Errorf("peak busy instances %d, met %v; want at least 2 at once", m.PeakBusy(), kv.met.Load())
			}
			if m.Live() > 4 {
				t.Errorf("%d live instances over the limit of 4", m.Live())
			}
			t.Logf("peak busy %d, live %d", m.PeakBusy(), m.Live())
			m.Close(ctx)
			if n := rt.LiveInstances(); n != 0 {
				t.Errorf("%d instances alive after Close", n)
			}
			rt.Close(ctx)
			if n := settle(t, base); n > base {
				t.Errorf("goroutines: %d after, %d before", n, base)
			}
		})
	}
}

// TestIdleInstancesAreClosed: a burst starts four instances; once the
// calls stop, those idle past the timeout are closed but one, and a call
// afterwards is served (its handle configured again on the instance left).
func TestIdleInstancesAreClosed(t *testing.T) {
	ctx := context.Background()
	rt, err := NewRuntime(ctx, Config{CacheDir: plugintest.CacheDir(), Interpreter: interpreter})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m, err := rt.LoadFile(ctx, asPlugin(t, "conformance"),
		Options{Grant: abi.Capabilities, Limits: Limits{Instances: 4, IdleTimeout: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	echo := configure(t, m, "echo", `{"prefix":"p:"}`)
	// Four calls held at once: the module needs four instances.
	var held []*instance
	for range 4 {
		in, err := m.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, in)
	}
	for _, in := range held {
		m.release(in)
	}
	if m.Live() != 4 {
		t.Fatalf("live %d after the burst; want 4", m.Live())
	}
	testkit.Eventually(t, "the idle instances to close", func() bool { return m.Live() == 1 })
	if m.Reaped() != 3 {
		t.Errorf("reaped %d; want 3", m.Reaped())
	}
	if _, err := echo.Act(ctx, call(t, `{}`)); err != nil {
		t.Fatalf("a call after the reaping: %v", err)
	}
	// A module that keeps its instances keeps them.
	keep, err := rt.LoadFile(ctx, asPlugin(t, "conformance"),
		Options{Grant: abi.Capabilities, Limits: Limits{Instances: 2, IdleTimeout: -1}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := keep.acquire(ctx)
	b, _ := keep.acquire(ctx)
	keep.release(a)
	keep.release(b)
	time.Sleep(100 * time.Millisecond)
	if keep.Live() != 2 {
		t.Errorf("live %d with IdleTimeout -1; want 2", keep.Live())
	}
}

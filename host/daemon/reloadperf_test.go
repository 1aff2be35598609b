package daemon

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// withCustomSection returns a module that behaves like b but has another
// digest: a custom section appended, as a rebuild with a new version
// string would.
func withCustomSection(b []byte, name, payload string) []byte {
	sec := append([]byte{byte(len(name))}, name...)
	sec = append(sec, payload...)
	out := append([]byte(nil), b...)
	out = append(out, 0) // custom section
	n := len(sec)
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			out = append(out, c|0x80)
			continue
		}
		out = append(out, c)
		break
	}
	return append(out, sec...)
}

// TestReloadLatency measures hot reload: file written → new version
// serving, p50/p99 over 100 swaps, for an AssemblyScript module and a Go
// module with a warm compilation cache, next to the debounce and a plain
// warm load of the same module in the same run; and a condition's call
// latency p99 during the swaps against a quiet period of the same length.
// RULED_PERF=1 runs it (make bench); it reports, it does not assert times.
func TestReloadLatency(t *testing.T) {
	if os.Getenv("RULED_PERF") == "" {
		t.Skip("RULED_PERF=1 to measure")
	}
	for _, mod := range []struct{ name, path string }{
		{"assemblyscript", filepath.Join(plugintest.Root(), "sdk/assemblyscript/build/conformance.wasm")},
		{"go", plugintest.Go(t, "host/wasm/testdata/conformance/go")},
	} {
		t.Run(mod.name, func(t *testing.T) { reloadLatency(t, mod.path) })
	}
}

func reloadLatency(t *testing.T, path string) {
	ctx := context.Background()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	variants := [2][]byte{withCustomSection(orig, "ruled-bench", "a"), withCustomSection(orig, "ruled-bench", "b")}
	dir := t.TempDir()
	plugins, rulesDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "rules")
	os.MkdirAll(plugins, 0o755)
	deploy(t, filepath.Join(plugins, "conformance.wasm"), variants[0])
	writeRules(t, rulesDir, `
- id: c
  on: t.in
  when: {do: conformance.noop}
  steps:
    - do: conformance.log_levels
`)
	const debounce = 20 * time.Millisecond
	cfg := Config{RulesDir: rulesDir, PluginsDir: plugins, DataDir: filepath.Join(dir, "data"), Watch: true,
		ReloadDebounce: debounce, Plugins: map[string]PluginConfig{"conformance": {Grant: abi.Capabilities}}}
	td := startDaemon(t, cfg)

	// A plain warm load of the same module: a new runtime over the same
	// compilation cache, as a restart would have.
	var loads []time.Duration
	for i := 0; i < 5; i++ {
		rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: wasm.DefaultCacheDir(cfg.DataDir)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := rt.Load(ctx, variants[i%2], wasm.Options{Grant: abi.Capabilities}); err != nil {
			t.Fatal(err)
		}
		loads = append(loads, time.Since(start))
		rt.Close(ctx)
	}
	warm := pct(loads, 50)

	cond, err := td.eng.Catalog().Configure("conformance", "noop", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := wasm.NewCall(abi.CallInfo{Topic: "t.in"}, []byte(`{"topic":"t.in"}`))
	measure := func(stop <-chan struct{}) []time.Duration {
		var out []time.Duration
		for {
			select {
			case <-stop:
				return out
			default:
			}
			start := time.Now()
			if _, err := cond.When(ctx, c); err != nil {
				t.Errorf("call failed: %v", err)
				return out
			}
			out = append(out, time.Since(start))
			time.Sleep(200 * time.Microsecond)
		}
	}
	run := func(during func()) []time.Duration {
		stop := make(chan struct{})
		var got []time.Duration
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); got = measure(stop) }()
		during()
		close(stop)
		wg.Wait()
		return got
	}
	var swaps []time.Duration
	var swapTime time.Duration
	during := run(func() {
		start := time.Now()
		for i := 1; i <= 100; i++ {
			b := variants[i%2]
			t0 := time.Now()
			deploy(t, filepath.Join(plugins, "conformance.wasm"), b)
			want := digestOf(b)
			for td.eng.Catalog().Module("conformance").Digest() != want {
				time.Sleep(100 * time.Microsecond)
			}
			swaps = append(swaps, time.Since(t0))
			// Let the reload's tail (rules recompiled, the module store
			// collected) finish, so each swap is measured alone rather than
			// queued behind the last one's bookkeeping.
			time.Sleep(30 * time.Millisecond)
		}
		swapTime = time.Since(start)
	})
	quiet := run(func() { time.Sleep(swapTime) })
	p99 := pct(swaps, 99)
	t.Logf("reload (file written → serving), 100 swaps: p50 %v p99 %v; debounce %v, warm load %v; target p99 ≤ debounce + 2× warm load = %v: %v",
		pct(swaps, 50).Round(time.Microsecond), p99.Round(time.Microsecond), debounce, warm.Round(time.Microsecond),
		(debounce + 2*warm).Round(time.Microsecond), p99 <= debounce+2*warm)
	dp99, qp99 := pct(during, 99), pct(quiet, 99)
	t.Logf("condition call p99 during the swaps %v (%d calls), without %v (%d calls): %.2fx (target ≤ 2x)",
		dp99, len(during), qp99, len(quiet), float64(dp99)/float64(qp99))
}

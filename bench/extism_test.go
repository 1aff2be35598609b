// Package bench compares ruled with Extism on the same work, and with
// Node-RED on the same flow (flow_test.go). It is its own module so that
// Extism never enters ruled's go.mod.
package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/ruled-dev/ruled/internal/plugintest"
)

// The same 200-byte event the host/wasm benchmarks use.
var event = []byte(`{"id":"evt-000123","type":"temperature","source":"sensor/kitchen","time":"2024-05-01T12:34:56Z","data":{"value":23.5,"unit":"C","battery":87},"tags":["home","kitchen"],"seq":123456}`)

func buildExtism(b *testing.B) string {
	b.Helper()
	out := filepath.Join(plugintest.BuildDir(), "bench-extism.wasm")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	os.MkdirAll(plugintest.BuildDir(), 0o755)
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./extism-plugin")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build extism plugin: %v\n%s", err, o)
	}
	return out
}

func extismPlugin(b *testing.B) *extism.Plugin {
	ctx := context.Background()
	wasm, err := os.ReadFile(buildExtism(b))
	if err != nil {
		b.Fatal(err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(plugintest.CacheDir())
	if err != nil {
		b.Fatal(err)
	}
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(cache)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	p, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close(ctx); cp.Close(ctx) })
	return p
}

func BenchmarkExtism(b *testing.B) {
	b.Run("when", func(b *testing.B) {
		p := extismPlugin(b)
		b.ReportAllocs()
		for b.Loop() {
			rc, out, err := p.Call("when", event)
			if err != nil || rc != 0 || len(out) != 1 || out[0] != 1 {
				b.Fatal(rc, out, err)
			}
		}
	})
	b.Run("noop", func(b *testing.B) {
		p := extismPlugin(b)
		b.ReportAllocs()
		for b.Loop() {
			if rc, _, err := p.Call("noop", nil); err != nil || rc != 0 {
				b.Fatal(rc, err)
			}
		}
	})
}

package wasm

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/exprcheck"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// The benchmarks behind `make bench` (see .ci/bench.sh, which runs them in
// interleaved rounds and reports medians and ratios). Every side of a
// comparison starts from the same 200-byte JSON bytes and must give the same
// answer: the two-field condition `type == "temperature" && data.value > 20`.

var benchEvent = []byte(sampleEvent)

type benchSide struct {
	h   *Handle
	vb  abi.ViewBuilder
	c   Call
	pre *Call // the event decoded once, for the marginal cost
}

func benchHandle(b *testing.B, path string, o Options, interp bool, fn string) *benchSide {
	b.Helper()
	ctx := context.Background()
	rt, err := NewRuntime(ctx, Config{CacheDir: plugintest.CacheDir(), Interpreter: interp})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(ctx) })
	o.Grant = abi.Capabilities
	m, err := rt.LoadFile(ctx, path, o)
	if err != nil {
		b.Fatal(err)
	}
	h, err := m.Configure(ctx, fn, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := &benchSide{h: h, pre: call(b, sampleEvent)}
	s.c.Info = s.pre.Info
	s.c.Raw = benchEvent
	if fn == "temp_high" {
		if ok, err := s.decodeAndWhen(ctx); err != nil || !ok {
			b.Fatalf("%s disagrees: %v %v", path, ok, err)
		}
	}
	return s
}

// decodeAndWhen is the whole per-event cost: decode the JSON into a view,
// then call the condition.
func (s *benchSide) decodeAndWhen(ctx context.Context) (bool, error) {
	var err error
	if s.c.View, err = s.vb.Append(s.c.View[:0], benchEvent, false); err != nil {
		return false, err
	}
	return s.h.When(ctx, &s.c)
}

func runWhen(b *testing.B, s *benchSide) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := s.decodeAndWhen(ctx); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func runMarginal(b *testing.B, s *benchSide) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := s.h.When(ctx, s.pre); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

type nativeEvent struct {
	Type string `json:"type"`
	Data struct {
		Value float64 `json:"value"`
	} `json:"data"`
}

func BenchmarkWhen(b *testing.B) {
	goConf := func(b *testing.B) string { return goPlugin(b, "host/wasm/testdata/conformance/go") }
	asConf := func(b *testing.B) string { return asPlugin(b, "conformance") }
	cConf := func(b *testing.B) string { return plugintest.C(b, "sdk/c/conformance") }
	rustConf := func(b *testing.B) string { return plugintest.Rust(b, "sdk/rust/conformance/conformance.rs") }
	b.Run("native-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ev nativeEvent
			if err := json.Unmarshal(benchEvent, &ev); err != nil || !(ev.Type == "temperature" && ev.Data.Value > 20) {
				b.Fatal(err)
			}
		}
	})
	b.Run("native-expr", func(b *testing.B) {
		prog, err := expr.Compile(`$env.type == "temperature" && data.value > 20`, expr.AsBool())
		if err != nil {
			b.Fatal(err)
		}
		var machine vm.VM
		b.ReportAllocs()
		for b.Loop() {
			var env map[string]any
			if err := json.Unmarshal(benchEvent, &env); err != nil {
				b.Fatal(err)
			}
			if out, err := machine.Run(prog, env); err != nil || out != true {
				b.Fatal(out, err)
			}
		}
	})
	b.Run("host-expr", func(b *testing.B) { // a string when:, as the host evaluates it
		p, err := exprcheck.Compile(`$env.type == "temperature" && data.value > 20`)
		if err != nil {
			b.Fatal(err)
		}
		var vb abi.ViewBuilder
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			if buf, err = vb.Append(buf[:0], benchEvent, false); err != nil {
				b.Fatal(err)
			}
			v, err := abi.ParseView(buf)
			if err != nil {
				b.Fatal(err)
			}
			if ok, err := p.Eval(v, abi.View{}); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("host-expr-marginal", func(b *testing.B) {
		p, err := exprcheck.Compile(`$env.type == "temperature" && data.value > 20`)
		if err != nil {
			b.Fatal(err)
		}
		v, err := abi.ParseView(call(b, sampleEvent).View)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := p.Eval(v, abi.View{}); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("ruled-go", func(b *testing.B) { runWhen(b, benchHandle(b, goConf(b), Options{}, false, "temp_high")) })
	b.Run("ruled-as", func(b *testing.B) { runWhen(b, benchHandle(b, asConf(b), Options{}, false, "temp_high")) })
	b.Run("ruled-c", func(b *testing.B) { runWhen(b, benchHandle(b, cConf(b), Options{}, false, "temp_high")) })
	b.Run("ruled-rust", func(b *testing.B) { runWhen(b, benchHandle(b, rustConf(b), Options{}, false, "temp_high")) })
	b.Run("ruled-rust-marginal", func(b *testing.B) {
		runMarginal(b, benchHandle(b, rustConf(b), Options{}, false, "temp_high"))
	})
	b.Run("ruled-c-marginal", func(b *testing.B) { runMarginal(b, benchHandle(b, cConf(b), Options{}, false, "temp_high")) })
	b.Run("ruled-go-marginal", func(b *testing.B) { runMarginal(b, benchHandle(b, goConf(b), Options{}, false, "temp_high")) })
	b.Run("ruled-as-marginal", func(b *testing.B) { runMarginal(b, benchHandle(b, asConf(b), Options{}, false, "temp_high")) })
	b.Run("ruled-go-unprotected", func(b *testing.B) {
		runWhen(b, benchHandle(b, goConf(b), Options{unprotected: true}, false, "temp_high"))
	})
	b.Run("ruled-go-interpreter", func(b *testing.B) { runWhen(b, benchHandle(b, goConf(b), Options{}, true, "temp_high")) })
	b.Run("ruled-as-interpreter", func(b *testing.B) { runWhen(b, benchHandle(b, asConf(b), Options{}, true, "temp_high")) })
}

func BenchmarkNoop(b *testing.B) {
	for _, sdk := range sdks {
		b.Run("ruled-"+map[string]string{"go": "go", "assemblyscript": "as", "c": "c", "rust": "rust"}[sdk.name], func(b *testing.B) {
			s := benchHandle(b, sdk.path(b), Options{}, false, "noop")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := s.h.When(ctx, s.pre); err != nil || ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkLoad prices loading a plugin into a new runtime, as after a
// restart: cold (an empty compilation cache) and warm (the cache on disk
// from an earlier run), first instance and handshake included.
func BenchmarkLoad(b *testing.B) {
	for _, sdk := range sdks {
		short := map[string]string{"go": "go", "assemblyscript": "as", "c": "c", "rust": "rust"}[sdk.name]
		for _, warm := range []bool{false, true} {
			name := short + "-cold"
			if warm {
				name = short + "-warm"
			}
			b.Run(name, func(b *testing.B) {
				path := sdk.path(b)
				dir := b.TempDir()
				ctx := context.Background()
				load := func(cache string) {
					rt, err := NewRuntime(ctx, Config{CacheDir: cache})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := rt.LoadFile(ctx, path, Options{Grant: abi.Capabilities}); err != nil {
						b.Fatal(err)
					}
					rt.Close(ctx)
				}
				if warm {
					load(dir)
				}
				n := 0
				for b.Loop() {
					cache := dir
					if !warm {
						n++
						cache = dir + "/" + string(rune('a'+n%26)) + "-" + itoaTest(n)
					}
					load(cache)
					if !warm {
						b.StopTimer()
						os.RemoveAll(cache)
						b.StartTimer()
					}
				}
			})
		}
	}
}

func itoaTest(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

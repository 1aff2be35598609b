package instrument

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// features enables every proposal the testdata uses.
const features = api.CoreFeaturesV2 | experimental.CoreFeaturesThreads | experimental.CoreFeaturesTailCall

type engine struct {
	name string
	cfg  func() wazero.RuntimeConfig
}

var (
	compiler    = engine{"compiler", wazero.NewRuntimeConfigCompiler}
	interpreter = engine{"interpreter", wazero.NewRuntimeConfigInterpreter}
	engines     = []engine{compiler, interpreter}
)

// runtime returns a runtime of engine e, with env.wasm instantiated as "env"
// for the modules that import from it.
func (e engine) runtime(tb testing.TB) wazero.Runtime {
	tb.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, e.cfg().WithCoreFeatures(features))
	tb.Cleanup(func() { r.Close(ctx) })
	if _, err := r.InstantiateWithConfig(ctx, readTestdata(tb, "env.wasm"), wazero.NewModuleConfig().WithName("env")); err != nil {
		tb.Fatal(err)
	}
	return r
}

func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// testdataModules returns the names of the committed .wasm files.
func testdataModules(tb testing.TB) []string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.wasm"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no testdata modules: %v", err)
	}
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths
}

func mustInstrument(tb testing.TB, wasm []byte, o Options) *Module {
	tb.Helper()
	m, err := Instrument(wasm, o)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// instantiate instantiates wasm in r as an anonymous module, so that the
// original and the instrumented copy can share a runtime.
func instantiate(tb testing.TB, r wazero.Runtime, wasm []byte) api.Module {
	tb.Helper()
	m, err := r.InstantiateWithConfig(context.Background(), wasm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func fuel(tb testing.TB, m api.Module) api.MutableGlobal {
	tb.Helper()
	return mutableGlobal(tb, m, FuelExportName)
}

// budget gives m fuel as the host does before a call: the fuel, and the
// checkpoint threshold CheckpointUnits below it.
func budget(tb testing.TB, m api.Module, units int64) {
	tb.Helper()
	fuel(tb, m).Set(uint64(units))
	mutableGlobal(tb, m, NextExportName).Set(uint64(max(units-CheckpointUnits, 0)))
}

func stop(tb testing.TB, m api.Module) api.MutableGlobal {
	tb.Helper()
	return mutableGlobal(tb, m, StopExportName)
}

func mutableGlobal(tb testing.TB, m api.Module, name string) api.MutableGlobal {
	tb.Helper()
	g, ok := m.ExportedGlobal(name).(api.MutableGlobal)
	if !ok {
		tb.Fatalf("no mutable global exported as %q", name)
	}
	return g
}

// Helpers that build modules byte by byte for the malformed-input tests.

func module(secs ...[]byte) []byte {
	b := append([]byte(nil), magic...)
	for _, s := range secs {
		b = append(b, s...)
	}
	return b
}

func sec(id byte, payload ...byte) []byte {
	return append(appendU32([]byte{id}, uint32(len(payload))), payload...)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// body returns a function body with no locals.
func body(code ...byte) []byte {
	return append(appendU32(nil, uint32(len(code)+1)), append([]byte{0}, code...)...)
}

var (
	typeSec = sec(secType, 1, 0x60, 0, 0)
	funcSec = sec(secFunction, 1, 0)
	memSec  = sec(secMemory, 1, 0, 1)
)

// withCode returns a valid module shape with one function of the given body.
func withCode(b []byte) []byte {
	return module(typeSec, funcSec, memSec, sec(secCode, cat([]byte{1}, b)...))
}

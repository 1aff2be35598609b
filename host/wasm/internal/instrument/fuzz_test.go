package instrument

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/ruled-dev/ruled/internal/fuzzmem"
)

var (
	fuzzRuntimeOnce sync.Once
	fuzzRuntime     wazero.Runtime
)

// compiles reports whether wazero's compiler accepts wasm, and why not.
func compiles(wasm []byte) error {
	fuzzRuntimeOnce.Do(func() {
		cfg := wazero.NewRuntimeConfigCompiler().WithCoreFeatures(features)
		fuzzRuntime = wazero.NewRuntimeWithConfig(context.Background(), cfg)
	})
	c, err := fuzzRuntime.CompileModule(context.Background(), wasm)
	if err == nil {
		c.Close(context.Background())
	}
	return err
}

// bodySeeds are function bodies (locals, then code) of type [] -> [] for a
// one-memory module: FuzzInstrument wraps an input without the wasm magic in
// such a module, so that mutations explore instruction sequences rather than
// mostly breaking the module's structure.
var bodySeeds = [][]byte{
	{0, 0x03, 0x40, 0x41, 0x00, 0x0d, 0x00, 0x0b, 0x0b},                                                   // loop br_if
	{1, 1, 0x7e, 0x02, 0x7f, 0x41, 0x03, 0x0b, 0x1a, 0x0b},                                                // local i64; block (result i32)
	{0, 0x02, 0x40, 0x41, 0x00, 0x0e, 0x01, 0x00, 0x00, 0x0b, 0x0b},                                       // br_table
	{0, 0x41, 0x00, 0x28, 0x02, 0x03, 0x1a, 0x0b},                                                         // i32.load offset=3
	{0, 0x41, 0x00, 0x41, 0x03, 0x41, 0x0b, 0xfc, 0x0b, 0x00, 0x0b},                                       // memory.fill
	{0, 0x43, 0, 0, 0x80, 0x7f, 0xfc, 0x00, 0x1a, 0x0b},                                                   // i32.trunc_sat_f32_s
	{0, 0x41, 0x00, 0xfe, 0x10, 0x02, 0x00, 0x1a, 0xfe, 0x03, 0x00, 0x0b},                                 // i32.atomic.load fence
	{0, 0xfd, 0x0c, 3, 11, 3, 11, 3, 11, 3, 11, 3, 11, 3, 11, 3, 11, 3, 11, 0xfd, 0x15, 0x03, 0x1a, 0x0b}, // v128.const extract_lane
	{0, 0x41, 0x00, 0x41, 0x00, 0xfd, 0x00, 0x04, 0x00, 0xfd, 0x56, 0x02, 0x00, 0x01, 0x1a, 0x0b},         // v128.load32_lane
	{0, 0x42, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x1a, 0x0b},                     // i64.const max
	{0, 0xd0, 0x70, 0xd1, 0x41, 0x01, 0x41, 0x02, 0x1c, 0x01, 0x7f, 0x1a, 0x1a, 0x0b},                     // ref.null ref.is_null select t
}

// FuzzInstrument checks that Instrument never panics, that its errors carry
// the package prefix, that its output is refused a second time (the exports
// are taken), and that whenever wazero compiles the input it also compiles
// the output. A wazero panic on an input Instrument accepted fails too: the
// host would crash on it (see countFunctions).
func FuzzInstrument(f *testing.F) {
	for _, name := range testdataModules(f) {
		f.Add(readTestdata(f, name))
	}
	for _, b := range bodySeeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		if !bytes.HasPrefix(wasm, magic[:4]) {
			wasm = withCode(append(appendU32(nil, uint32(len(wasm))), wasm...))
		}
		o := Options{}
		if len(wasm)%2 == 0 {
			o.MemoryPages = 4
		}
		if len(wasm)%3 == 0 {
			o.StackSlots = 1000
		}
		var m *Module
		var err error
		// The output is the input with a few instructions per function
		// added: a small multiple of it, whatever the input.
		fuzzmem.Check(t, wasm, 64, 256<<10, func() { m, err = Instrument(wasm, o) })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "instrument: ") {
				t.Fatalf("got %v; want the instrument: prefix", err)
			}
			return
		}
		if _, err := Instrument(m.Bytes, o); err == nil || !strings.Contains(err.Error(), "already exports") {
			t.Fatalf("instrumenting twice: got %v; want already exports", err)
		}
		if compiles(wasm) != nil {
			return
		}
		if err := compiles(m.Bytes); err != nil {
			t.Fatalf("the input compiles but the output does not: %v", err)
		}
	})
}

package instrument

import (
	"context"
	"testing"
)

// checkBaseline decrements first and traps below zero, re-reading the
// global; it ignores the stop global and the checkpoint. Kept to compare
// with checkCost.
func checkBaseline(fuel, _ uint32) []byte {
	b := appendU32([]byte{opGlobalGet}, fuel)
	b = append(b, opI64Const, 1, opI64Sub)
	b = appendU32(append(b, opGlobalSet), fuel)
	b = appendU32(append(b, opGlobalGet), fuel)
	return append(b, opI64Const, 0, 0x53 /* i64.lt_s */, opIf, blockEmpty, opUnreachable, opEnd)
}

// checkZero traps at zero fuel, with no checkpoint: checkCost's
// comparison against the constant 0 instead of the threshold global.
func checkZero(fuel, _ uint32) []byte {
	b := appendU32([]byte{opGlobalGet}, fuel)
	b = append(b, opI64Const, 0, opI64LeS, opIf, blockEmpty, opUnreachable, opEnd)
	b = appendU32(append(b, opGlobalGet), fuel)
	b = append(b, opI64Const, 1, opI64Sub)
	return appendU32(append(b, opGlobalSet), fuel)
}

// variants are the modules the tight-loop benchmarks compare.
func variants(b *testing.B, wasm []byte) []struct {
	name string
	wasm []byte
} {
	out := []struct {
		name string
		wasm []byte
	}{{"plain", wasm}}
	for _, v := range []struct {
		name  string
		check checkFunc
	}{{"fuel", nil}, {"fuel-baseline", checkBaseline}, {"fuel-zero", checkZero}} {
		m, err := instrument(wasm, Options{}, v.check)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, struct {
			name string
			wasm []byte
		}{v.name, m.Bytes})
	}
	return out
}

// benchQuotes counts '"' in a 2,000-byte buffer per iteration: a tight loop
// whose body is a handful of instructions, the worst case for the checks.
func benchQuotes(b *testing.B, e engine) {
	for _, v := range variants(b, readTestdata(b, "quotes.wasm")) {
		b.Run(v.name, func(b *testing.B) {
			m := instantiate(b, e.runtime(b), v.wasm)
			quotes(m)
			f := m.ExportedFunction("count")
			ctx := context.Background()
			for b.Loop() {
				if res, err := f.Call(ctx, 0, 2000); err != nil || res[0] != 286 {
					b.Fatalf("got %v, %v; want 286", res, err)
				}
			}
		})
	}
}

func BenchmarkTightLoop(b *testing.B) { benchQuotes(b, compiler) }

func BenchmarkTightLoopInterpreter(b *testing.B) { benchQuotes(b, interpreter) }

// BenchmarkGoAdd calls a tiny Go-compiled export: the cost there is the call
// itself plus Go's function prologue, with one function-entry check.
func BenchmarkGoAdd(b *testing.B) {
	orig := goReactor(b)
	for _, v := range []struct {
		name string
		wasm []byte
	}{{"plain", orig}, {"fuel", mustInstrument(b, orig, Options{}).Bytes}} {
		b.Run(v.name, func(b *testing.B) {
			f := instantiateGo(b, compiler, v.wasm).ExportedFunction("add")
			ctx := context.Background()
			for b.Loop() {
				if res, err := f.Call(ctx, 2, 3); err != nil || res[0] != 5 {
					b.Fatalf("got %v, %v; want 5", res, err)
				}
			}
		})
	}
}

// BenchmarkGoWork calls a Go-compiled export doing map, string and
// goroutine work: a realistic mix of loops and calls.
func BenchmarkGoWork(b *testing.B) {
	orig := goReactor(b)
	for _, v := range []struct {
		name string
		wasm []byte
	}{{"plain", orig}, {"fuel", mustInstrument(b, orig, Options{}).Bytes}} {
		b.Run(v.name, func(b *testing.B) {
			f := instantiateGo(b, compiler, v.wasm).ExportedFunction("work")
			ctx := context.Background()
			for b.Loop() {
				if res, err := f.Call(ctx, 20000); err != nil || res[0] != 199990000 {
					b.Fatalf("got %v, %v; want 199990000", res, err)
				}
			}
		})
	}
}

// BenchmarkInstrumentGo measures the load-time rewrite of a Go module.
func BenchmarkInstrumentGo(b *testing.B) {
	wasm := goReactor(b)
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := Instrument(wasm, Options{MemoryPages: 1024}); err != nil {
			b.Fatal(err)
		}
	}
}

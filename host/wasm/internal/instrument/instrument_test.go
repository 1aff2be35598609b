package instrument

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

// sameResultCases are calls whose results must not change under
// instrumentation.
var sameResultCases = []struct {
	file, fn string
	args     []uint64
	setup    func(api.Module)
	want     []uint64
}{
	{file: "loop_sum.wasm", fn: "sum", args: []uint64{1000}, want: []uint64{499500}},
	{file: "loop_sum.wasm", fn: "nested", args: []uint64{30}, want: []uint64{435 * 435}},
	{file: "recursion.wasm", fn: "fib", args: []uint64{20}, want: []uint64{6765}},
	{file: "recursion.wasm", fn: "fact", args: []uint64{20}, want: []uint64{2432902008176640000}},
	{file: "recursion.wasm", fn: "even", args: []uint64{1001}, want: []uint64{0}},
	{file: "br_table.wasm", fn: "switch", args: []uint64{0}, want: []uint64{10}},
	{file: "br_table.wasm", fn: "switch", args: []uint64{2}, want: []uint64{30}},
	{file: "br_table.wasm", fn: "switch", args: []uint64{7}, want: []uint64{40}},
	{file: "br_table.wasm", fn: "collatz", args: []uint64{27}, want: []uint64{111}},
	{file: "multivalue.wasm", fn: "mv", args: []uint64{5, 12}, want: []uint64{7}},
	{file: "multivalue.wasm", fn: "mv", args: []uint64{200, 5}, want: []uint64{195}},
	{file: "multivalue.wasm", fn: "loopparam", args: []uint64{10}, want: []uint64{55}},
	{file: "multivalue.wasm", fn: "divmod", args: []uint64{17, 5}, want: []uint64{3, 2}},
	{file: "features.wasm", fn: "bulk", want: []uint64{byteSum("hello, world") + 4*3}},
	{file: "features.wasm", fn: "simd", want: []uint64{145}},
	{file: "features.wasm", fn: "simdcount", args: []uint64{0, 4}, setup: threes, want: []uint64{5 + 4}},
	{file: "features.wasm", fn: "refs", want: []uint64{19}},
	{file: "features.wasm", fn: "conv", want: []uint64{math.MaxUint32 - 1 - 32768}},
	{file: "features.wasm", fn: "tail", args: []uint64{100000}, want: []uint64{200000}},
	{file: "features.wasm", fn: "tailindirect", want: []uint64{3}},
	{file: "atomics.wasm", fn: "atomics", want: []uint64{15}},
	{file: "globals.wasm", fn: "get", want: []uint64{1321}},
	{file: "quotes.wasm", fn: "count", args: []uint64{0, 2000}, setup: quotes, want: []uint64{286}},
}

func byteSum(s string) uint64 {
	var n uint64
	for _, c := range []byte(s) {
		n += uint64(c)
	}
	return n
}

// threes writes five 3s into the first 64 bytes of memory.
func threes(m api.Module) {
	for _, off := range []uint32{0, 9, 17, 40, 63} {
		m.Memory().WriteByte(off, 3)
	}
}

// quotes writes a '"' at every seventh of the first 2,000 bytes.
func quotes(m api.Module) {
	buf := make([]byte, 2000)
	for i := range buf {
		buf[i] = 'a'
		if i%7 == 0 {
			buf[i] = '"'
		}
	}
	m.Memory().Write(0, buf)
}

func call(m api.Module, fn string, setup func(api.Module), args ...uint64) ([]uint64, error) {
	if setup != nil {
		setup(m)
	}
	f := m.ExportedFunction(fn)
	if f == nil {
		return nil, fmt.Errorf("no export %q", fn)
	}
	return f.Call(context.Background(), args...)
}

// TestSameResults: instrumented, with and without the stack count, every
// case returns what the original does, and the count is back to zero.
func TestSameResults(t *testing.T) {
	for _, e := range engines {
		for _, c := range sameResultCases {
			t.Run(fmt.Sprintf("%s/%s/%s%v", e.name, c.file, c.fn, c.args), func(t *testing.T) {
				orig := readTestdata(t, c.file)
				inst := mustInstrument(t, orig, Options{}).Bytes
				counted := mustInstrument(t, orig, Options{StackSlots: 1 << 20}).Bytes
				r := e.runtime(t)
				for i, wasm := range [][]byte{orig, inst, counted} {
					m := instantiate(t, r, wasm)
					got, err := call(m, c.fn, c.setup, c.args...)
					if err != nil || !slices.Equal(got, c.want) {
						t.Errorf("got %v, %v; want %v", got, err, c.want)
					}
					// Every exit gave its frame back.
					if i == 2 {
						if s := mutableGlobal(t, m, StackExportName).Get(); s != 0 {
							t.Errorf("%d slots counted after the call returned; want 0", s)
						}
					}
				}
			})
		}
	}
}

func TestFuelExhaustionTraps(t *testing.T) {
	for _, e := range engines {
		for _, c := range []struct{ file, fn string }{
			{"spin.wasm", "spin"},
			{"calltree.wasm", "tree"}, // no loop: function entries only
		} {
			t.Run(e.name+"/"+c.fn, func(t *testing.T) {
				m := instantiate(t, e.runtime(t), mustInstrument(t, readTestdata(t, c.file), Options{}).Bytes)
				budget(t, m, 100000)
				if _, err := call(m, c.fn, nil); err == nil {
					t.Fatalf("got no error; want a trap")
				}
				// Spent: at most a function entry's cost below zero.
				if got := int64(fuel(t, m).Get()); got > 0 || got <= -entryUnits {
					t.Errorf("fuel after the trap: got %v; want 0 down to %d", got, 1-entryUnits)
				}
			})
		}
	}
}

// TestFuelAccounting checks what a call costs — entryUnits a function
// entry (its 4 instructions outside the loop add nothing), one unit a
// loop iteration and its body's 15 instructions / instrsPerUnit: sum(n)
// enters the function once and its loop n+1 times — and when it traps: at
// the check that finds the fuel spent, or at the first checkpoint after
// the host set the stop global.
func TestFuelAccounting(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			m := instantiate(t, e.runtime(t), mustInstrument(t, readTestdata(t, "loop_sum.wasm"), Options{}).Bytes)
			g := fuel(t, m)
			if got, s := int64(g.Get()), int64(stop(t, m).Get()); got != math.MaxInt64 || s != 0 {
				t.Errorf("initial fuel, stop: got %v, %v; want %v, 0", got, s, int64(math.MaxInt64))
			}
			const n, pass = 10, 1 + 15/instrsPerUnit
			const cost = entryUnits + (n+1)*pass
			for _, c := range []struct {
				fuel, stop, left int64
				trap             bool
			}{
				{fuel: 1000, left: 1000 - cost},
				{fuel: cost, left: 0},
				// A check looks, then takes its charge: fuel short of the
				// last pass's charge ends below zero, and the next check
				// traps; short of a whole pass, the last check traps.
				{fuel: cost - 1, left: -1},
				{fuel: cost - pass, left: 0, trap: true},
				{fuel: 0, left: 0, trap: true},
				{fuel: -5, left: -5, trap: true},
				// Under CheckpointUnits, the threshold is 0 from the start:
				// the checkpoint, and so the stop global, is read only when
				// the fuel runs out.
				{fuel: 1000, stop: 1, left: 1000 - cost},
				{fuel: cost - pass, stop: 1, left: 0, trap: true},
				// Over it, the first check is at a checkpoint.
				{fuel: CheckpointUnits + 1, stop: 1, left: CheckpointUnits + 1, trap: true},
				{fuel: math.MaxInt64, stop: math.MaxInt64, left: math.MaxInt64, trap: true},
				{fuel: CheckpointUnits + 1, left: CheckpointUnits + 1 - cost},
			} {
				budget(t, m, c.fuel)
				if c.fuel > CheckpointUnits {
					mutableGlobal(t, m, NextExportName).Set(uint64(c.fuel)) // a checkpoint at the first check
				}
				stop(t, m).Set(uint64(c.stop))
				_, err := call(m, "sum", nil, n)
				if (err != nil) != c.trap || int64(g.Get()) != c.left {
					t.Errorf("fuel %d, stop %d: got error %v, %d left; want trap %v, %d left", c.fuel, c.stop, err, int64(g.Get()), c.trap, c.left)
				}
			}
		})
	}
}

// TestChargedByWork: bulk memory costs by its length and memory.grow by
// its pages, charged before they run; a function entry by its locals.
func TestChargedByWork(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			m := instantiate(t, e.runtime(t), mustInstrument(t, readTestdata(t, "charges.wasm"), Options{}).Bytes)
			for _, c := range []struct {
				fn   string
				args []uint64
				cost int64
			}{
				{"fill", []uint64{65536}, entryUnits + 1 + 65536>>bytesShift},
				{"copy", []uint64{4096}, entryUnits + 1 + 4096>>bytesShift},
				{"grow", []uint64{3}, entryUnits + 1 + 3<<pageShift},
				{"tgrow", []uint64{3}, entryUnits + 1 + 3<<entryShift},
				{"locals", nil, entryUnits + (entryUnits + 64/localsPerUnit)},
			} {
				budget(t, m, 1<<17)
				if _, err := call(m, c.fn, nil, c.args...); err != nil {
					t.Fatalf("%s: %v", c.fn, err)
				}
				if got := 1<<17 - int64(fuel(t, m).Get()); got != c.cost {
					t.Errorf("%s%v cost %d units; want %d", c.fn, c.args, got, c.cost)
				}
			}
			// The table is capped: a grow past MaxTableEntries fails (-1)
			// rather than allocating the host's memory.
			budget(t, m, math.MaxInt64/2)
			if got, err := call(m, "tgrow", nil, MaxTableEntries); err != nil || int32(got[0]) != -1 {
				t.Errorf("tgrow(MaxTableEntries) = %v, %v; want -1, refused", got, err)
			}
			// A fill its fuel does not cover traps before it runs: the
			// memory keeps its zeros.
			m.Memory().WriteByte(100, 0)
			budget(t, m, 100)
			if _, err := call(m, "fill", nil, 65536); err == nil {
				t.Fatal("a 64 KiB fill with 100 units of fuel ran")
			}
			if b, _ := m.Memory().ReadByte(100); b != 0 {
				t.Errorf("the memory was filled (%d) by a fill its fuel did not cover", b)
			}
		})
	}
}

// TestStackBound: a call deeper than StackSlots traps, a shallower one
// runs, and the count is back to zero after a call that returned, however
// it returned (end, return, a branch to the function's label, a tail
// call).
func TestStackBound(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			// fn(n) recurses n times. A frame is 4 + 1 param + 0 locals +
			// what its operand stack can hold: one slot for each local.get,
			// constant and call (of one result) in its body. A bound of 100
			// frames lets 98 run and refuses 100.
			for _, c := range []struct {
				fn    string
				frame uint32
			}{
				{"depth", 5 + 6},
				{"depthret", 5 + 6},
				{"depthbr", 5 + 6},
			} {
				m := instantiate(t, e.runtime(t), mustInstrument(t, readTestdata(t, "charges.wasm"), Options{StackSlots: c.frame * 100}).Bytes)
				slots := mutableGlobal(t, m, StackExportName)
				if got, err := call(m, c.fn, nil, 98); err != nil || got[0] != 98 {
					t.Errorf("%s(98) within the bound: %v, %v", c.fn, got, err)
				}
				if s := slots.Get(); s != 0 {
					t.Errorf("%s: %d slots counted after it returned; want 0", c.fn, s)
				}
				if _, err := call(m, c.fn, nil, 100); err == nil {
					t.Errorf("%s(100) past the bound of 100 frames ran", c.fn)
				}
			}
			m := instantiate(t, e.runtime(t), mustInstrument(t, readTestdata(t, "charges.wasm"), Options{StackSlots: 11 * 100}).Bytes)
			slots := mutableGlobal(t, m, StackExportName)
			if got, err := call(m, "tail", nil, 100000); err != nil || got[0] != 100000 {
				t.Errorf("tail(100000): a tail call takes no frame: %v, %v", got, err)
			}
			if s := slots.Get(); s != 0 {
				t.Errorf("tail: %d slots counted after it returned; want 0", s)
			}
		})
	}
}

func TestGlobalIndices(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			m := instantiate(t, e.runtime(t), mustInstrument(t, readTestdata(t, "globals.wasm"), Options{}).Bytes)
			for i, want := range []uint64{1321, 1322} {
				if got, err := call(m, "get", nil); err != nil || got[0] != want {
					t.Errorf("call %d: got %v, %v; want %v", i, got, err, want)
				}
			}
			fuel(t, m).Set(0)
			if _, err := call(m, "get", nil); err == nil {
				t.Errorf("got no error with no fuel; want a trap")
			}
		})
	}
}

func TestMinimalModuleGetsSections(t *testing.T) {
	m := mustInstrument(t, readTestdata(t, "minimal.wasm"), Options{})
	if m.Functions != 0 || m.MinPages != 2 || m.MaxPages != maxPages {
		t.Errorf("got %+v; want 0 functions, 2..65536 pages", m)
	}
	mod := instantiate(t, compiler.runtime(t), m.Bytes)
	if got := fuel(t, mod).Get(); got != math.MaxInt64 {
		t.Errorf("got fuel %v; want %v", got, uint64(math.MaxInt64))
	}
}

// TestStartSectionExported: the start section is dropped and its function
// exported as StartExportName; instantiating runs nothing, the host's call
// of it does what the start function did, and a spin in it is stopped by
// its fuel like any call.
func TestStartSectionExported(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			ins := mustInstrument(t, readTestdata(t, "start.wasm"), Options{})
			if ins.StartExport != StartExportName {
				t.Fatalf("StartExport %q", ins.StartExport)
			}
			m := instantiate(t, e.runtime(t), ins.Bytes)
			if got, _ := call(m, "get", nil); got[0] != 0 {
				t.Errorf("the start function ran at instantiation: get = %d", got[0])
			}
			if _, err := call(m, StartExportName, nil); err != nil {
				t.Fatal(err)
			}
			if got, _ := call(m, "get", nil); got[0] != 7 {
				t.Errorf("after %s, get = %d; want 7", StartExportName, got[0])
			}
			if plain := mustInstrument(t, readTestdata(t, "loop_sum.wasm"), Options{}); plain.StartExport != "" {
				t.Errorf("a module without a start section got StartExport %q", plain.StartExport)
			}
		})
	}
}

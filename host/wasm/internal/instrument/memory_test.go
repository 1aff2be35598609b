package instrument

import (
	"strings"
	"testing"
)

func TestMemoryLimits(t *testing.T) {
	for _, c := range []struct {
		file          string
		cap           uint32
		wantMin       uint32
		wantMax       uint32
		wantErr       string
		growOK, growX uint64 // memory.grow(growOK) succeeds, then memory.grow(growX) fails
	}{
		{file: "mem_cap.wasm", cap: 10, wantMin: 1, wantMax: 10, growOK: 9, growX: 1},
		{file: "mem_cap.wasm", cap: 0, wantMin: 1, wantMax: 100, growOK: 99, growX: 1},
		{file: "mem_cap.wasm", cap: 1000, wantMin: 1, wantMax: 100, growOK: 99, growX: 1},
		{file: "mem_cap.wasm", cap: 1, wantMin: 1, wantMax: 1, growOK: 0, growX: 1},
		{file: "mem_nomax.wasm", cap: 0, wantMin: 3, wantMax: 65536},
		{file: "mem_nomax.wasm", cap: 5, wantMin: 3, wantMax: 5, growOK: 2, growX: 1},
		{file: "mem_big.wasm", cap: 10, wantErr: "instrument: module needs 20 pages of memory at start, over the cap of 10 pages"},
		{file: "mem_big.wasm", cap: 20, wantMin: 20, wantMax: 20},
		{file: "mem_import.wasm", wantErr: "instrument: module must define exactly one memory (it imports 1 and defines 0)"},
		{file: "mem_none.wasm", wantErr: "instrument: module must define exactly one memory (it imports 0 and defines 0)"},
	} {
		t.Run(c.file, func(t *testing.T) {
			m, err := Instrument(readTestdata(t, c.file), Options{MemoryPages: c.cap})
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("got %v; want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.MinPages != c.wantMin || m.MaxPages != c.wantMax {
				t.Errorf("got pages %d..%d; want %d..%d", m.MinPages, m.MaxPages, c.wantMin, c.wantMax)
			}
			mod := instantiate(t, compiler.runtime(t), m.Bytes)
			if max, ok := mod.Memory().Definition().Max(); c.cap != 0 && (!ok || max != c.wantMax) {
				t.Errorf("got runtime maximum %d (declared %v); want %d", max, ok, c.wantMax)
			}
			if c.growX == 0 {
				return
			}
			if got, err := call(mod, "grow", nil, c.growOK); err != nil || got[0] != uint64(c.wantMin) {
				t.Errorf("grow(%d): got %v, %v; want %v", c.growOK, got, err, c.wantMin)
			}
			grow := mod.ExportedGlobal(m.GrowExport)
			if got := int32(grow.Get()); got != int32(c.wantMin) {
				t.Errorf("grow global after a granted grow = %d; want %d", got, c.wantMin)
			}
			if got, err := call(mod, "grow", nil, c.growX); err != nil || int32(got[0]) != -1 {
				t.Errorf("grow(%d) past the maximum: got %v, %v; want -1", c.growX, got, err)
			}
			if got := int32(grow.Get()); got != -1 {
				t.Errorf("grow global after a refused grow = %d; want -1", got)
			}
		})
	}
}

func TestMemoryRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		mem  []byte
		want string
	}{
		{"shared", sec(secMemory, 1, 3, 1, 1), "shared memory is not supported"},
		{"64-bit", sec(secMemory, 1, 4, 1), "64-bit memory is not supported"},
		{"unknown flags", sec(secMemory, 1, 8, 1), "unknown limits flags 0x08"},
		{"two", sec(secMemory, 2, 0, 1, 0, 1), "module must define exactly one memory (it imports 0 and defines 2)"},
		{"min over 4 GiB", sec(secMemory, 1, 0, 0x81, 0x80, 0x04), "memory minimum of 65537 pages is over the limit of 65536"},
		{"min over max", sec(secMemory, 1, 1, 2, 1), "memory minimum of 2 pages is over its maximum of 1"},
		{"trailing", sec(secMemory, 1, 0, 1, 0), "unexpected bytes after the memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Instrument(module(c.mem), Options{MemoryPages: 10})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v; want %v", err, c.want)
			}
		})
	}
}

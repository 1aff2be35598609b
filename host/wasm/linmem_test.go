package wasm

import (
	"testing"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// TestLinearMemoryGrows: both kinds of linear memory grow to their
// maximum and no further, keep what was written, and read zeros where
// nothing was; a reservation never moves, so a grow copies nothing.
func TestLinearMemoryGrows(t *testing.T) {
	const page, max = 65536, 64 * 65536
	for _, tc := range []struct {
		name  string
		mem   func() experimental.LinearMemory
		fixed bool // the bytes never move
	}{
		{"reserved", func() experimental.LinearMemory { return memoryAllocator.Allocate(page, max) }, reserves},
		{"heap", func() experimental.LinearMemory { return &heapMemory{buf: make([]byte, 0, page), max: max} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mem()
			defer m.Free()
			b := m.Reallocate(page)
			if len(b) != page {
				t.Fatalf("first: %d bytes", len(b))
			}
			b[0], b[page-1] = 1, 2
			at := unsafe.SliceData(b)
			for _, size := range []uint64{2 * page, 33 * page, max} {
				g := m.Reallocate(size)
				if uint64(len(g)) != size || g[0] != 1 || g[page-1] != 2 || g[size-1] != 0 {
					t.Fatalf("grown to %d: %d bytes, kept %d %d, new %d", size, len(g), g[0], g[page-1], g[size-1])
				}
				if tc.fixed && unsafe.SliceData(g) != at {
					t.Fatalf("grown to %d: the memory moved", size)
				}
			}
			if g := m.Reallocate(max + page); g != nil {
				t.Fatalf("past the maximum: %d bytes, want none", len(g))
			}
		})
	}
}

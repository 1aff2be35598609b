//go:build amd64 || arm64 || riscv64 || ppc64le || s390x || loong64

package wasm

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator reserves each instance's memory (see linmem.go).
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(reserve)

// reserve maps max bytes of private, zero-filled pages, reserved only
// (MAP_NORESERVE): a page takes memory when first touched. It falls back
// to heapMemory when the kernel refuses the mapping.
func reserve(capacity, max uint64) experimental.LinearMemory {
	if max == 0 || max > 1<<32 {
		return &heapMemory{buf: make([]byte, 0, capacity), max: max}
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		return &heapMemory{buf: make([]byte, 0, capacity), max: max}
	}
	return &mappedMemory{b: b}
}

// mappedMemory is linear memory in a reservation of its maximum: a grow
// is a longer slice of the same pages, which never move.
type mappedMemory struct {
	b []byte
}

// Reallocate implements experimental.LinearMemory.
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.b)) {
		return nil
	}
	return m.b[:size:size]
}

// Free implements experimental.LinearMemory: the pages go back to the
// kernel. wazero calls it when the instance's module is closed; nothing
// of the host keeps a view of guest memory past the call that read it
// (host functions copy what they keep).
func (m *mappedMemory) Free() {
	if m.b != nil {
		syscall.Munmap(m.b)
		m.b = nil
	}
}

// reserves tells tests that memoryAllocator's memory never moves.
const reserves = true

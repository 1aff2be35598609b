//go:build !linux || !(amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package wasm

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is wazero's behaviour where no reservation is made
// (see linmem.go): a 32-bit address space has no room for one per
// instance.
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(
	func(capacity, max uint64) experimental.LinearMemory {
		return &heapMemory{buf: make([]byte, 0, capacity), max: max}
	})

// reserves tells tests that memoryAllocator's memory may move.
const reserves = false

package wasm

import "github.com/tetratelabs/wazero/experimental"

// Linear memory: where a guest's bytes live.
//
// wazero keeps a module's memory in a Go slice by default, and a
// memory.grow past its capacity appends the new pages: one allocation,
// then one clear of every new byte, which the Go runtime cannot preempt.
// A guest that grew to 34 MiB held the whole process for 17-144 ms here,
// and for over a second on a loaded CI machine under the race detector
// (TestHostileStopsAndHoldsNoOne): a garbage collection that started
// meanwhile waited for the clear, and every goroutine waited for the
// collection. The deadline's timer was among them.
//
// So each instance's memory is a reservation of its maximum, mapped once
// when the instance is made (linmem_linux.go): a grow only lengthens the
// slice, and the kernel zero-fills a page when the guest first touches it.
// The pages a guest touches stay resident until the instance is closed,
// as before; what it never touches costs address space only. Where a
// reservation cannot be made (another OS, a 32-bit machine, a kernel that
// refuses), heapMemory keeps wazero's behaviour.

// heapMemory is linear memory in a Go slice, grown by copying: wazero's
// own behaviour, the fallback where no reservation can be made.
type heapMemory struct {
	buf []byte
	max uint64
}

// Reallocate implements experimental.LinearMemory.
func (m *heapMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.max))
	copy(grown, m.buf)
	m.buf = grown
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *heapMemory) Free() { m.buf = nil }

var _ experimental.LinearMemory = (*heapMemory)(nil)

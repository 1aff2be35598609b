// Package fuzzmem checks, in fuzz targets, that what a decoder allocates
// for an input stays within a small multiple of the input's size: a
// parser that any input can make allocate without bound is a memory
// exhaustion waiting for its input.
//
// It is for tests only and owns no goroutine. The measure is the process's
// allocated bytes around one call (runtime.ReadMemStats), so the bounds
// carry a fixed allowance for what the fuzzing engine allocates meanwhile.
package fuzzmem

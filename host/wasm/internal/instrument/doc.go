// Package instrument rewrites a WebAssembly module at load time so that a
// runaway guest can be stopped cheaply and its memory is capped.
//
// The host runs guests under wazero, which has no fuel metering. Its
// WithCloseOnContextDone option makes every loop and call poll a
// cancellation flag, and measured 5-7x slower on Go-compiled modules (16-24x
// on tight loops). Instead, Instrument adds an exported mutable i64 global,
// the fuel, and a check at every function entry and loop header that takes
// one unit and traps when the fuel is spent (about 1.2x on a tight loop under
// the compiler). Any endless execution passes a loop header or a function
// entry endlessly often, so the fuel bounds it.
//
// For wall-clock deadlines the host stops a running guest from a timer. It
// does so through a second exported global, the stop threshold, which the
// guest reads at every check but never writes: the guest traps when its fuel
// is at or below it, so storing math.MaxInt64 there stops it at its next
// check. Zeroing the fuel itself would race with the guest's own
// read-modify-write of it and can be lost for a long time (see checkFuel).
//
// The package owns the byte-level rewrite only: it parses sections and
// function bodies, inserts the checks, appends the two globals and their
// exports, lowers the declared memory maximum and drops DWARF sections whose
// code offsets no longer match. It rewrites bytes; it never compiles or runs them,
// never hashes them (the module's digest is taken over the original bytes by
// the caller), and it owns no goroutine. It does not validate the module
// beyond what it needs to rewrite it: the runtime validates the result.
//
// It refuses what it cannot rewrite safely: modules that import their memory
// or define other than exactly one, shared or 64-bit memories, instructions
// outside the supported proposals (MVP, sign extension, non-trapping
// float-to-int, bulk memory, reference types, multi-value, tail calls, SIMD,
// threads' atomics), and any malformed encoding. It also refuses a few
// inputs that would crash wazero v1.12.0 when the host compiles the result:
// counts larger than the bytes that follow them (wazero allocates by the
// declared count first), more than 50,000 locals in a function, and
// functions whose type index is out of range (a call to one panics wazero;
// see guard.go and countFunctions). It never panics on input.
package instrument

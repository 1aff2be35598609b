// Package instrument rewrites a WebAssembly module at load time so that a
// runaway guest can be stopped cheaply and its memory is capped.
//
// The host runs guests under wazero, which has no fuel metering. Its
// WithCloseOnContextDone option makes every loop and call poll a
// cancellation flag, and measured 5-7x slower on Go-compiled modules (16-24x
// on tight loops). Instead, Instrument adds an exported mutable i64 global,
// the fuel, and a check at every function entry and loop header that takes
// its cost and, when the fuel has come down to a threshold, calls a
// checkpoint that traps if the fuel is spent (about 1.2-1.6x on a tight loop
// under the compiler). Any endless execution passes a loop header or a
// function entry endlessly often, so the fuel bounds it; and a unit stands
// for about the same time whatever the guest does (meter.go: a function
// entry is weighted by its locals and its length, a loop pass by its body's
// length, bulk memory by its length, memory.grow by its pages), so the
// budget a deadline is turned into bounds every kind of guest.
//
// The checkpoint, every CheckpointUnits, takes the guest through Go (a
// memory.grow of 0 pages, which wazero's compiled code does in Go), where
// the Go runtime can stop it for a garbage collection and timers run:
// compiled guest code cannot be preempted, and without it a collection that
// started while a guest ran held every goroutine until the guest's fuel ran
// out (see checkCost).
//
// For wall-clock deadlines the host stops a running guest from a timer,
// through a second exported global, the stop flag, which the guest reads at
// every checkpoint but never writes: storing any non-zero value there stops
// it at its next checkpoint. Zeroing the fuel itself would race with the
// guest's own read-modify-write of it and can be lost for a long time.
//
// The call stack is bounded too (Options.StackSlots): every frame's slots
// (its parameters, locals and a static bound on its operand stack, which
// the compiler spills across a call) are counted on entry and taken back at every exit, and a call that takes
// the count past the bound traps — wazero's own bound is 400 MB, whatever
// the memory cap. A start section, which would run while the module is
// instantiated, outside any budget, is dropped and its function exported
// (StartExportName) for the host to call first.
//
// The package owns the byte-level rewrite only: it parses sections and
// function bodies, inserts the checks, the charges and the stack count,
// appends its globals, helper functions and their types and exports, lowers
// the declared memory maximum, drops the start section and DWARF sections
// whose code offsets no longer match. It rewrites bytes; it never compiles
// or runs them, never hashes them (the module's digest is taken over the
// original bytes by the caller), and it owns no goroutine. It does not
// validate the module beyond what it needs to rewrite it: the runtime
// validates the result. Function, type and global indices the module uses
// keep their meaning: what it adds comes after what it has.
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

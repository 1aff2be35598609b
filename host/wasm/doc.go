// Package wasm runs plugins: it loads WebAssembly modules, checks them
// against ABI v1 and the operator's grants, keeps a small pool of instances
// per module, and calls their conditions and actions under a deadline, a
// fuel budget and a memory cap.
//
// It owns the wazero runtime, the compilation cache on disk, the host
// functions of abi.ImportModule, and everything that makes a third party's
// code safe to call: a trap, a timeout or a memory bomb fails that call with
// an error naming the plugin and the cause, the instance it ran on is thrown
// away, and every other call keeps being served.
//
// It refuses to know about rules, runs and stores: what a publish, a kv
// write, a fire or an outbound HTTP request does (and where a request may
// go) is up to the Services the caller supplies, and what a failed call
// means for a run is up to the caller. What it checks itself is the grant
// and the kind of call: only actions reach a capability's host function.
//
// # Concurrency
//
// Runtime, Module and Handle are safe for concurrent use. Instances are
// single-threaded, so a Module hands each call its own instance from a
// bounded pool (a channel, created lazily up to Limits.Instances) and blocks
// a caller when all are busy. The package starts no goroutine of its own:
// a call runs on its caller's goroutine, and the only other code that runs is
// the per-instance deadline timer's callback, which sets the instance's stop
// flag and is stopped when the call returns. NewRuntime measures, once,
// what a unit of fuel costs on this machine (Calibration).
//
// # Runaway guests
//
// A module is instrumented at load (internal/instrument): a fuel counter is
// decremented at every function entry and loop header — weighted by work:
// an entry by its locals, bulk memory by its length, memory.grow by its
// pages —, and every 2^18 units the guest goes through a checkpoint, a trip
// through Go that lets the runtime preempt it (a garbage collection or a
// timer never waits on compiled guest code for longer) and traps if the
// fuel is spent or the stop flag set. A call starts with its fuel budget
// (its deadline at the calibrated rate, ×1.5), and the deadline timer sets
// the stop flag when time is up, so an infinite loop, a loop-free
// exponential call tree and a loop of huge memory fills all stop within a
// checkpoint of the deadline, releasing their goroutine. The call stack is
// bounded per call (Limits.StackBytes), and a start section runs as the
// first call, under the start-up budget. An instance's memory is a
// reservation of its maximum (linmem.go), so a memory.grow never clears
// megabytes in host code the runtime cannot preempt. wazero's own
// WithCloseOnContextDone costs 5-7x on Go guests; see RATIONALE.md.
// The module's digest is the sha256 of the bytes as shipped.
package wasm

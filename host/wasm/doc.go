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
// write or a fire does is up to the Services the caller supplies, and what a
// failed call means for a run is up to the caller.
//
// # Concurrency
//
// Runtime, Module and Handle are safe for concurrent use. Instances are
// single-threaded, so a Module hands each call its own instance from a
// bounded pool (a channel, created lazily up to Limits.Instances) and blocks
// a caller when all are busy. The package starts no goroutine of its own:
// a call runs on its caller's goroutine, and the only other code that runs is
// the per-instance deadline timer's callback, which sets the instance's fuel
// to zero and is stopped when the call returns.
//
// # Runaway guests
//
// A module is instrumented at load (internal/instrument): a fuel counter is
// decremented at every function entry and loop header, and the code traps
// when it goes below zero. A call starts with its fuel budget, and the
// deadline timer zeroes the counter when time is up, so an infinite loop and
// a loop-free exponential call tree both stop within a loop iteration or a
// function call of the deadline, releasing their goroutine. wazero's own
// WithCloseOnContextDone costs 5-7x on Go guests; see RATIONALE.md.
// The module's digest is the sha256 of the bytes as shipped.
package wasm

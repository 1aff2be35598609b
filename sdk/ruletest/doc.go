// Package ruletest runs rules and plugins in a test the way they run on a
// device — the real daemon, real compiled plugins, the embedded store —
// on a virtual clock: hour-long durable delays, restarts mid-wait, cancels
// and plugin upgrades while steps wait take no real time and give the same
// result on every run.
//
// It is host-side Go (it imports host/*), never compiled to wasm, and kept
// out of the guest SDK's dependencies (sdk/go is its own module). It does
// not import package testing: a Harness runs under any T, *testing.T or
// the scenario runner's (package scenario, `ruled test`).
//
// It owns a Harness: the daemon under test, its data directory, the
// virtual clock, the events it published, the action calls it made, and
// the timeline a failure prints. It owns BuildGo, which builds a Go plugin
// package into a cache. It refuses real time: a test moves the clock with
// Advance; the harness waits only for the daemon's workers to go idle
// (Settle), which every call does before it returns.
package ruletest

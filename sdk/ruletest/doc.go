// Package ruletest runs rules and plugins in a test the way they run on a
// device — the real daemon, real compiled plugins, the embedded store —
// on a virtual clock: hour-long durable delays, restarts mid-wait, cancels
// and plugin upgrades while steps wait take no real time and give the same
// result on every run.
//
// It is host-side Go (it imports host/*), never compiled to wasm, and kept
// out of the guest SDK's dependencies (sdk/go is its own module).
//
// It owns a Harness: the daemon under test, its data directory, the
// virtual clock and the events it published. It refuses real time: a test
// moves the clock with Advance; the harness waits only for the daemon's
// workers to go idle (Settle), which every call does before it returns.
//
// This is the first part of the rule-testing tools: scenario files
// (`ruled test`), captures and timelines in failure messages come next.
package ruletest

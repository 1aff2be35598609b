// Package sched parks work until a time: one heap of timers behind one
// runtime timer, so a hundred thousand runs waiting out their delays cost a
// hundred thousand small heap entries and nothing else — no goroutine per
// wait, and no goroutine of the package's own (the runtime timer's callback
// fires the due entries and re-arms).
//
// Scheduler runs on the real clock; Virtual on a clock a test (or ruletest)
// advances by hand, firing due entries synchronously, so an hour-long delay
// tests in microseconds. Both give the sequencer the same three methods.
//
// It owns the timers and refuses everything else: what a fired entry does
// is the caller's callback, which must be short (it should hand work to a
// pool, not do it).
package sched

// Package core is the sequencer's policy as plain data: what a rule's
// mode, cooldown, throttle and debounce decide for a trigger, given the
// state of its key — with no lock, clock, pool, store or plugin inside. The
// caller (seq.Runner, the driver) reads the time, holds its lock, and
// carries out what a decision says: starting a run, ending the live ones,
// queueing the trigger, turning it away with its reason, arming a timer.
//
// It owns the decisions and refuses everything else: runs, their steps
// and records are the driver's. It is the first part of issue 40's pure
// core, carved out of Runner.decideLocked and the throttle; the rest of
// the Runner's policy (debounce's holding, wait-for, retry, finally) moves here in
// the same shape, each on its own state.
//
// Nothing here starts a goroutine or reads a clock: every function is a
// pure function of its arguments, so a table or a fuzz test checks it
// whole.
package core

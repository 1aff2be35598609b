// Package core is the sequencer's policy as plain data: what a rule's
// mode, cooldown, throttle and debounce decide for a trigger, given the
// state of its key — with no lock, clock, pool, store or plugin inside. The
// caller (seq.Runner, the driver) reads the time, holds its lock, and
// carries out what a decision says: starting a run, ending the live ones,
// queueing the trigger, turning it away with its reason, arming a timer.
//
// A run's standing is plain data here too (Run: its position, attempt,
// phase, record state, outcome), and so are its moves: Advance after a
// step, Schedule to the next, End (a close first when the rule has
// finally steps), MovePast for the record of a run let go of, Retry,
// Settle for a step that ended (cut, tried again, failed, gone on from),
// Due for a parked step come due (let go, held while its rule is paused,
// dropped, judged, a wait's time up, run). A
// move changes the Run it is given and returns what the driver must do,
// in order (Ending's fields, raft's Ready): the key's lists, counters,
// timers, records and the execution log stay the driver's.
//
// It owns the decisions and refuses everything else: a run's world — its
// sequence, trigger, timer, ticket — and the state of the rules' keys
// are seq's machine's, which calls these functions under the Runner's
// lock (Runner.apply) and leaves what they say must be done to the world
// in its effects. What is still the machine's own policy — a debounce's
// holding, wait-for's matching, a throttle's queue — comes here in the
// same shape when a run's world is plain data too.
//
// Nothing here starts a goroutine or reads a clock: every function is a
// pure function of its arguments, so a table or a fuzz test checks it
// whole.
package core
